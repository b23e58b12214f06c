// The C half of the kcache OpenCL layer: the dispatch table the ICD loader
// calls, the program handles it gives the application, and trampolines
// through which the Go half calls the next layer (never libOpenCL's
// exported functions, which would re-enter this layer).
#ifndef KCACHE_LAYER_H
#define KCACHE_LAYER_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#define CL_USE_DEPRECATED_OPENCL_2_1_APIS
#define CL_USE_DEPRECATED_OPENCL_2_2_APIS
#include <CL/cl_layer.h>
#include <pthread.h>
#include <stdint.h>

// kc_program is the handle the application holds for a program it created
// from source. Its first field is a dispatch pointer, like every ICD
// object, and points at this layer's table, so anything that dispatches
// through the handle comes back here.
typedef struct kc_program {
	const struct _cl_icd_dispatch *dispatch;
	uint64_t magic;
	pthread_mutex_t mu;   // guards owned, nowned and writes of real
	cl_program source;    // the driver's program made from the application's source
	cl_program real;      // where calls go: source, or a program made from a cached binary (atomic)
	cl_program *owned;    // programs made from cached binaries, released with the handle
	int nowned;
	int refs;             // the application's reference count (atomic)
	int cached;           // real was made from a cached binary: KC_CACHED_* (atomic)
	int app_read;         // the application queried the program's binaries (atomic)
	struct kc_program *prev, *next; // the list of live handles (kc_live_mu)
} kc_program;

// What a handle's real program was made from.
enum { KC_SOURCE = 0, KC_CACHED_EXECUTABLE = 1, KC_CACHED_OBJECT = 2 };

// The next layer's dispatch table (the driver, through the loader).
extern const struct _cl_icd_dispatch *kc_target;

kc_program *kc_wrapper(cl_program p);
cl_program kc_real(kc_program *w);
cl_program kc_source(kc_program *w);
void kc_adopt(kc_program *w, cl_program b, int cached);
void kc_use_source(kc_program *w);
int kc_app_read(kc_program *w);

// kc_driver_is_up reports whether the application has listed devices or
// made a context, in a process that did not fork since.
int kc_driver_is_up(void);

// kc_self_path returns the path of the layer's own library, or NULL.
const char *kc_self_path(void);

// The programs whose binaries the Go half has still to store (its commit
// points are the application's own calls: see layer.c's kc_sync).
void kc_pending_add(cl_program real);
void kc_pending_remove(cl_program real);
int kc_pending_launched(cl_program real);

// kc_linked_count tells the C half how many programs made from cached
// linked binaries are alive (the Go half's table, link.go).
void kc_linked_count(int n);

// kc_info_value answers a clGet*Info query with the n bytes at src.
cl_int kc_info_value(const void *src, size_t n, size_t size, void *value, size_t *size_ret);

// Trampolines to the next layer, for the Go half.
cl_int kc_t_get_program_info(cl_program p, cl_program_info param, size_t size, void *value, size_t *size_ret);
cl_int kc_t_get_program_build_info(cl_program p, cl_device_id d, cl_program_build_info param, size_t size, void *value, size_t *size_ret);
cl_int kc_t_build_program(cl_program p, cl_uint nd, const cl_device_id *devs, const char *options);
// kc_extra_flags returns POCL_EXTRA_BUILD_FLAGS as the first of the
// application's builds that found it set read it (PoCL keeps that value),
// with *set 1; *set 0 where no build found it set. NULL with *set 1: the
// value could not be kept.
const char *kc_extra_flags(int *set);
cl_int kc_t_compile_program(cl_program p, cl_uint nd, const cl_device_id *devs, const char *options);
cl_program kc_t_create_program_with_binary(cl_context c, cl_uint nd, const cl_device_id *devs, const size_t *lengths, const unsigned char **bins, cl_int *status, cl_int *err);
cl_int kc_t_release_program(cl_program p);
cl_int kc_t_retain_program(cl_program p);
cl_program kc_t_link_program(cl_context c, cl_uint nd, const cl_device_id *devs, const char *options, cl_uint np, const cl_program *ps, cl_int *err);
cl_int kc_t_get_device_info(cl_device_id d, cl_device_info param, size_t size, void *value, size_t *size_ret);
cl_int kc_t_get_platform_info(cl_platform_id p, cl_platform_info param, size_t size, void *value, size_t *size_ret);

// kc_loader_count gives the dynamic loader's counts of the objects it has
// loaded and unloaded; 0 where it does not say.
int kc_loader_count(unsigned long long *adds, unsigned long long *subs);

#endif
