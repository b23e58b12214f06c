// The dispatch side of the layer. Every entry here is short: it swaps the
// application's program handle for the driver's program and calls the next
// layer, or hands a build to the Go half. Nothing here holds a lock across a
// call into the driver or Go, so a fork at any moment leaves no lock held
// in the child.
#define _GNU_SOURCE // dladdr
#include "layer.h"
#include "_cgo_export.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

// kc_magic tells this layer's handles from the driver's objects, together
// with the dispatch pointer.
#define KC_MAGIC 0x6b63616368654c31ull // "kcacheL1"

const struct _cl_icd_dispatch *kc_target;
static struct _cl_icd_dispatch kc_dispatch;
static int kc_enabled; // the cache opened; otherwise every call passes through

// kc_forked is set in the child of a fork. The Go half's threads do not
// survive a fork, so a child never calls into it: the handles it inherited
// keep working through the C half, their builds go to the driver, and the
// programs it creates are not wrapped.
static volatile int kc_forked;
static void kc_on_fork(void) { kc_forked = 1; }

// The Go half starts on a thread of its own (kc_start): starting the Go
// runtime and opening the cache take 10 to 20 ms, which the application's
// thread would otherwise wait for inside the loader's first call, before
// the driver's own start-up, which runs beside it instead. kc_init_done is
// set, with kc_enabled final, when that thread is done; the first call
// that needs the Go half waits for it.
static int kc_init_done;
static pthread_mutex_t kc_init_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kc_init_cv = PTHREAD_COND_INITIALIZER;

// kc_driver_up is set when the application first lists devices or makes a
// context (kc_driver_started), whether or not the Go half has started.
static int kc_driver_up;

int kc_driver_is_up(void) { return __atomic_load_n(&kc_driver_up, __ATOMIC_SEQ_CST) && !kc_forked; }

static void kc_init(void) {
	// A driver that started before the Go runtime did: kcGoInit starts the
	// search for its files, which kc_driver_started could not ask for,
	// before it opens the cache, so that the two run side by side.
	struct kcGoInit_return init = kcGoInit();
	int enabled = init.r0, sought = init.r1;
	pthread_mutex_lock(&kc_init_mu);
	kc_enabled = enabled;
	__atomic_store_n(&kc_init_done, 1, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&kc_init_cv);
	pthread_mutex_unlock(&kc_init_mu);
	// One that started while the cache opened: the search starts now.
	if (enabled && !sought && kc_driver_is_up()) {
		kcGoDriverStarted();
	}
}

static void *kc_init_thread(void *arg) {
	(void)arg;
	kc_init();
	return NULL;
}

// kc_go reports whether a call may use the Go half, waiting for its start.
// A forked child never waits: the thread starting it is not in the child.
static int kc_go(void) {
	if (kc_forked) {
		return 0;
	}
	if (!__atomic_load_n(&kc_init_done, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&kc_init_mu);
		while (!kc_init_done) {
			pthread_cond_wait(&kc_init_cv, &kc_init_mu);
		}
		pthread_mutex_unlock(&kc_init_mu);
	}
	return kc_enabled && !kc_forked;
}

// kc_start starts the Go half. With PoCL's kernel cache off it starts it
// here, on the application's thread: the Go half then gives the process a
// PoCL directory of its own through the environment, which must be set
// before the driver reads it and while no other thread reads it.
static void kc_start(void) {
	const char *pocl_cache = getenv("POCL_KERNEL_CACHE");
	if (pocl_cache != NULL && strcmp(pocl_cache, "0") == 0) {
		kc_init();
		return;
	}
	pthread_attr_t attr;
	pthread_t t;
	int ok = pthread_attr_init(&attr) == 0;
	ok = ok && pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0;
	ok = ok && pthread_create(&t, &attr, kc_init_thread, NULL) == 0;
	pthread_attr_destroy(&attr);
	if (!ok) {
		kc_init();
	}
}

static pthread_mutex_t kc_live_mu = PTHREAD_MUTEX_INITIALIZER;
static kc_program *kc_live; // live handles, for CL_KERNEL_PROGRAM

kc_program *kc_wrapper(cl_program p) {
	kc_program *w = (kc_program *)p;
	if (w == NULL || w->dispatch != &kc_dispatch || w->magic != KC_MAGIC) {
		return NULL;
	}
	return w;
}

// kc_real is on the path of every call with the application's handle: a
// plain atomic load, where a lock would cost more than the call itself.
cl_program kc_real(kc_program *w) { return __atomic_load_n(&w->real, __ATOMIC_ACQUIRE); }

cl_program kc_source(kc_program *w) { return w->source; }

// kc_adopt makes b, a program made from a cached binary (cached is
// KC_CACHED_EXECUTABLE or KC_CACHED_OBJECT), the one calls go to.
// Programs are kept until the handle dies: a kernel made from an earlier
// one may still ask for its program.
void kc_adopt(kc_program *w, cl_program b, int cached) {
	pthread_mutex_lock(&w->mu);
	cl_program *owned = realloc(w->owned, (w->nowned + 1) * sizeof *owned);
	if (owned != NULL) {
		w->owned = owned;
		w->owned[w->nowned++] = b;
		__atomic_store_n(&w->real, b, __ATOMIC_RELEASE);
		__atomic_store_n(&w->cached, cached, __ATOMIC_RELEASE);
		b = NULL;
	}
	pthread_mutex_unlock(&w->mu);
	if (b != NULL) { // out of memory: keep the source program
		kc_target->clReleaseProgram(b);
	}
}

void kc_use_source(kc_program *w) {
	pthread_mutex_lock(&w->mu);
	__atomic_store_n(&w->real, w->source, __ATOMIC_RELEASE);
	__atomic_store_n(&w->cached, KC_SOURCE, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&w->mu);
}

// kc_app_read reports whether the application has queried the binaries of
// w's programs: on PoCL the first such query compiles generic work-group
// functions and fixes the binary, so that a later read is cheap.
int kc_app_read(kc_program *w) { return __atomic_load_n(&w->app_read, __ATOMIC_ACQUIRE); }

const char *kc_self_path(void) {
	Dl_info info;
	if (dladdr((void *)kc_self_path, &info) == 0) {
		return NULL;
	}
	return info.dli_fname;
}

static cl_program kc_translate(cl_program p) {
	kc_program *w = kc_wrapper(p);
	return w ? kc_real(w) : p;
}

// kc_translate_list copies a list of programs with handles swapped; the
// caller frees the copy. NULL on allocation failure, with *ok cleared.
static cl_program *kc_translate_list(cl_uint n, const cl_program *ps, int *ok) {
	*ok = 1;
	if (n == 0 || ps == NULL) {
		return NULL;
	}
	cl_program *out = malloc(n * sizeof *out);
	if (out == NULL) {
		*ok = 0;
		return NULL;
	}
	for (cl_uint i = 0; i < n; i++) {
		out[i] = kc_translate(ps[i]);
	}
	return out;
}

static int kc_loader_count_cb(struct dl_phdr_info *info, size_t size, void *data) {
	unsigned long long *out = data;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		out[0] = info->dlpi_adds;
		out[1] = info->dlpi_subs;
		out[2] = 1;
	}
	return 1; // every object reports the same counts: the first is enough
}

// kc_loader_count gives the dynamic loader's counts of the objects it has
// loaded and unloaded in this process; 0 where this glibc does not say.
int kc_loader_count(unsigned long long *adds, unsigned long long *subs) {
	unsigned long long out[3] = {0, 0, 0};
	dl_iterate_phdr(kc_loader_count_cb, out);
	*adds = out[0];
	*subs = out[1];
	return (int)out[2];
}

// kc_ready reports, without waiting, whether the Go half has started and
// may be used.
static int kc_ready(void) {
	return __atomic_load_n(&kc_init_done, __ATOMIC_SEQ_CST) && kc_enabled && !kc_forked;
}

// A device listed or a context made tells the Go half that the driver has
// started (its plugins are loaded): it finds the driver's files in the
// background, for the key of the first build, which otherwise waits for
// that. Each is a chance to start earlier or, where the driver loaded more
// since, to find them again.
static void kc_driver_started(void) {
	__atomic_store_n(&kc_driver_up, 1, __ATOMIC_SEQ_CST);
	if (kc_ready()) {
		kcGoDriverStarted();
	}
}

static cl_int CL_API_CALL kc_clGetDeviceIDs(cl_platform_id p, cl_device_type type, cl_uint n, cl_device_id *devs,
                                            cl_uint *n_ret) {
	cl_int e = kc_target->clGetDeviceIDs(p, type, n, devs, n_ret);
	if (e == CL_SUCCESS && devs != NULL) {
		kc_driver_started();
	}
	return e;
}

static cl_context CL_API_CALL kc_clCreateContext(const cl_context_properties *props, cl_uint nd, const cl_device_id *devs,
                                                 void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                                                 void *user, cl_int *err) {
	cl_context c = kc_target->clCreateContext(props, nd, devs, notify, user, err);
	if (c != NULL) {
		kc_driver_started();
	}
	return c;
}

static cl_context CL_API_CALL kc_clCreateContextFromType(const cl_context_properties *props, cl_device_type type,
                                                         void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                                                         void *user, cl_int *err) {
	cl_context c = kc_target->clCreateContextFromType(props, type, notify, user, err);
	if (c != NULL) {
		kc_driver_started();
	}
	return c;
}

static cl_program CL_API_CALL kc_clCreateProgramWithSource(cl_context ctx, cl_uint count, const char **strings,
                                                           const size_t *lengths, cl_int *err) {
	cl_int e;
	cl_program s = kc_target->clCreateProgramWithSource(ctx, count, strings, lengths, &e);
	if (err != NULL) {
		*err = e;
	}
	if (s == NULL || e != CL_SUCCESS || !kc_go()) {
		return s;
	}
	kc_program *w = calloc(1, sizeof *w);
	if (w == NULL) {
		return s; // no handle of ours: the program simply is not cached
	}
	w->dispatch = &kc_dispatch;
	w->magic = KC_MAGIC;
	pthread_mutex_init(&w->mu, NULL);
	w->source = s;
	w->real = s;
	w->refs = 1;
	pthread_mutex_lock(&kc_live_mu);
	w->next = kc_live;
	if (kc_live != NULL) {
		kc_live->prev = w;
	}
	kc_live = w;
	pthread_mutex_unlock(&kc_live_mu);
	return (cl_program)w;
}

static cl_int CL_API_CALL kc_clRetainProgram(cl_program p) {
	kc_program *w = kc_wrapper(p);
	if (w == NULL) {
		return kc_target->clRetainProgram(p);
	}
	__atomic_add_fetch(&w->refs, 1, __ATOMIC_ACQ_REL);
	return CL_SUCCESS;
}

static void kc_free(kc_program *w) {
	pthread_mutex_lock(&kc_live_mu);
	if (w->prev != NULL) {
		w->prev->next = w->next;
	} else {
		kc_live = w->next;
	}
	if (w->next != NULL) {
		w->next->prev = w->prev;
	}
	pthread_mutex_unlock(&kc_live_mu);
	for (int i = 0; i < w->nowned; i++) {
		kc_target->clReleaseProgram(w->owned[i]);
	}
	kc_target->clReleaseProgram(w->source);
	free(w->owned);
	pthread_mutex_destroy(&w->mu);
	w->magic = 0;
	w->dispatch = NULL;
	free(w);
}

// kc_nlinked is how many programs made from cached linked binaries are
// alive: with none, which is almost always, the calls on the driver's
// programs cost one atomic load more.
static int kc_nlinked;
void kc_linked_count(int n) { __atomic_store_n(&kc_nlinked, n, __ATOMIC_RELEASE); }
static int kc_any_linked(void) { return kc_go() && __atomic_load_n(&kc_nlinked, __ATOMIC_ACQUIRE) > 0; }

// kc_fresh forgets what the layer knew of a driver's program at p's
// address: p is a new program, and a linked one from the cache that was
// there before has gone without the layer seeing its last release (a
// kernel held it).
static void kc_fresh(cl_program p) {
	if (p != NULL && kc_any_linked()) {
		kcGoLinkedForget(p);
	}
}

static cl_int CL_API_CALL kc_clReleaseProgram(cl_program p) {
	kc_program *w = kc_wrapper(p);
	if (w == NULL) {
		cl_uint refs = 0;
		if (kc_any_linked() &&
		    kc_target->clGetProgramInfo(p, CL_PROGRAM_REFERENCE_COUNT, sizeof refs, &refs, NULL) == CL_SUCCESS &&
		    refs == 1) {
			kcGoLinkedForget(p);
		}
		return kc_target->clReleaseProgram(p);
	}
	int left = __atomic_sub_fetch(&w->refs, 1, __ATOMIC_ACQ_REL);
	if (left < 0) {
		__atomic_add_fetch(&w->refs, 1, __ATOMIC_ACQ_REL);
		return CL_INVALID_PROGRAM;
	}
	if (left == 0) {
		// The binary is read for the cache before the driver may destroy
		// the program: after the application's launches, it is complete.
		if (kc_go()) {
			kcGoRelease(w);
		}
		kc_free(w);
	}
	return CL_SUCCESS;
}

// PoCL keeps POCL_EXTRA_BUILD_FLAGS from the first build, compile or link
// that finds it set, empty included (its runtime configuration keeps a
// variable once read): set, changed or unset afterwards, the environment no
// longer says what it appends. kc_note_extra_flags records the variable as
// each build the application makes reads it, before the driver does, so
// the Go half knows what PoCL holds (kc_extra_flags).
static pthread_mutex_t kc_extra_mu = PTHREAD_MUTEX_INITIALIZER;
static int kc_extra_set;      // guarded by kc_extra_mu: a build found it set
static char *kc_extra_value;  // guarded by kc_extra_mu: its value; NULL where it could not be copied

static void kc_note_extra_flags(void) {
	pthread_mutex_lock(&kc_extra_mu);
	if (!kc_extra_set) {
		const char *v = getenv("POCL_EXTRA_BUILD_FLAGS");
		if (v != NULL) {
			kc_extra_set = 1;
			kc_extra_value = strdup(v);
		}
	}
	pthread_mutex_unlock(&kc_extra_mu);
}

const char *kc_extra_flags(int *set) {
	pthread_mutex_lock(&kc_extra_mu);
	*set = kc_extra_set;
	const char *v = kc_extra_value; // never freed or changed once set
	pthread_mutex_unlock(&kc_extra_mu);
	return v;
}

static cl_int CL_API_CALL kc_clBuildProgram(cl_program p, cl_uint nd, const cl_device_id *devs, const char *options,
                                            void(CL_CALLBACK *notify)(cl_program, void *), void *user_data) {
	kc_note_extra_flags();
	kc_program *w = kc_wrapper(p);
	if (w == NULL) {
		return kc_target->clBuildProgram(p, nd, devs, options, notify, user_data);
	}
	if (nd > 0 && devs == NULL) {
		return CL_INVALID_VALUE;
	}
	if (notify == NULL && user_data != NULL) {
		return CL_INVALID_VALUE;
	}
	// The build is synchronous, which the specification allows, so the
	// callback runs once it is over, with the application's handle.
	cl_int err;
	if (kc_go()) {
		err = kcGoBuild(w, nd, (cl_device_id *)devs, (char *)options);
	} else {
		kc_use_source(w);
		err = kc_target->clBuildProgram(w->source, nd, devs, options, NULL, NULL);
	}
	if (notify != NULL) {
		notify(p, user_data);
	}
	return err;
}

static cl_int CL_API_CALL kc_clCompileProgram(cl_program p, cl_uint nd, const cl_device_id *devs, const char *options,
                                              cl_uint nh, const cl_program *headers, const char **names,
                                              void(CL_CALLBACK *notify)(cl_program, void *), void *user_data) {
	kc_note_extra_flags();
	kc_program *w = kc_wrapper(p);
	int ok;
	cl_program *hs = kc_translate_list(nh, headers, &ok);
	if (!ok) {
		return CL_OUT_OF_HOST_MEMORY;
	}
	if (w == NULL) {
		cl_int err = kc_target->clCompileProgram(p, nd, devs, options, nh, hs ? hs : headers, names, notify, user_data);
		free(hs);
		return err;
	}
	// A callback would see the driver's handle, so the compile is
	// synchronous and the callback is called here with the application's.
	cl_int err;
	if (kc_go() && nh == 0 && !(nd > 0 && devs == NULL) && !(notify == NULL && user_data != NULL)) {
		// A compile of the source alone goes through the cache: the
		// compiled object is what it stores (hashcat compiles and links).
		err = kcGoCompile(w, nd, (cl_device_id *)devs, (char *)options);
	} else {
		// Embedded headers are programs the key cannot see: the driver
		// compiles the source program, which answers every call from now
		// on, and whatever the cache knew of the program no longer holds.
		if (kc_go()) {
			kcGoForget(w);
		}
		kc_use_source(w);
		err = kc_target->clCompileProgram(w->source, nd, devs, options, nh, hs ? hs : headers, names, NULL, NULL);
	}
	free(hs);
	if (notify != NULL) {
		notify(p, user_data);
	}
	return err;
}

static cl_program CL_API_CALL kc_clLinkProgram(cl_context ctx, cl_uint nd, const cl_device_id *devs, const char *options,
                                               cl_uint np, const cl_program *ps,
                                               void(CL_CALLBACK *notify)(cl_program, void *), void *user_data,
                                               cl_int *err) {
	kc_note_extra_flags();
	int ok;
	cl_program *in = kc_translate_list(np, ps, &ok);
	if (!ok) {
		if (err != NULL) {
			*err = CL_OUT_OF_HOST_MEMORY;
		}
		return NULL;
	}
	if (kc_go() && np > 0 && ps != NULL && !(nd > 0 && devs == NULL) && !(notify == NULL && user_data != NULL)) {
		// A link of compiled objects that came through the cache goes
		// through it too, synchronously: the callback, if any, is called
		// here with the linked program.
		int handled = 0;
		cl_int lerr = CL_SUCCESS;
		cl_program out = kcGoLink(ctx, nd, (cl_device_id *)devs, (char *)options, np, (cl_program *)ps,
		                          in ? in : (cl_program *)ps, &handled, &lerr);
		if (handled) {
			free(in);
			if (err != NULL) {
				*err = lerr;
			}
			if (notify != NULL && out != NULL) {
				notify(out, user_data);
			}
			return out;
		}
	}
	cl_program out = kc_target->clLinkProgram(ctx, nd, devs, options, np, in ? in : ps, notify, user_data, err);
	free(in);
	kc_fresh(out);
	return out;
}

static cl_program CL_API_CALL kc_clCreateProgramWithBinary(cl_context ctx, cl_uint nd, const cl_device_id *devs,
                                                           const size_t *lengths, const unsigned char **bins,
                                                           cl_int *status, cl_int *err) {
	cl_program out = kc_target->clCreateProgramWithBinary(ctx, nd, devs, lengths, bins, status, err);
	kc_fresh(out);
	return out;
}

static cl_program CL_API_CALL kc_clCreateProgramWithIL(cl_context ctx, const void *il, size_t n, cl_int *err) {
	cl_program out = kc_target->clCreateProgramWithIL(ctx, il, n, err);
	kc_fresh(out);
	return out;
}

// kc_binaries_mu serializes every query of program binaries, the
// application's and the layer's own. PoCL builds a program's binary at
// the first such query, without a lock of its own: two threads doing it at
// once, one of them after a kernel's first launch added code to the
// program, leave sizes that do not match the bytes copied.
static pthread_mutex_t kc_binaries_mu = PTHREAD_MUTEX_INITIALIZER;

// kc_program_info passes a program query to the driver, holding
// kc_binaries_mu for the binary queries.
static cl_int kc_program_info(cl_program p, cl_program_info param, size_t size, void *value, size_t *size_ret) {
	if (param != CL_PROGRAM_BINARY_SIZES && param != CL_PROGRAM_BINARIES) {
		return kc_target->clGetProgramInfo(p, param, size, value, size_ret);
	}
	pthread_mutex_lock(&kc_binaries_mu);
	cl_int err = kc_target->clGetProgramInfo(p, param, size, value, size_ret);
	pthread_mutex_unlock(&kc_binaries_mu);
	return err;
}

// kc_info_value answers a clGet*Info query whose value is the n bytes at
// src, as a driver does: the size wherever size_ret asks for it, the value
// wherever value does, and CL_INVALID_VALUE for a buffer too small.
cl_int kc_info_value(const void *src, size_t n, size_t size, void *value, size_t *size_ret) {
	if (value != NULL) {
		if (size < n) {
			return CL_INVALID_VALUE;
		}
		memcpy(value, src, n);
	}
	if (size_ret != NULL) {
		*size_ret = n;
	}
	return CL_SUCCESS;
}

static cl_int CL_API_CALL kc_clGetProgramInfo(cl_program p, cl_program_info param, size_t size, void *value,
                                              size_t *size_ret) {
	kc_program *w = kc_wrapper(p);
	if (w == NULL) {
		return kc_program_info(p, param, size, value, size_ret);
	}
	switch (param) {
	case CL_PROGRAM_REFERENCE_COUNT: {
		cl_uint refs = (cl_uint)__atomic_load_n(&w->refs, __ATOMIC_ACQUIRE);
		return kc_info_value(&refs, sizeof refs, size, value, size_ret);
	}
	case CL_PROGRAM_SOURCE:
	case CL_PROGRAM_IL:
		// A program made from a binary has no source; the application's has.
		return kc_target->clGetProgramInfo(w->source, param, size, value, size_ret);
	case CL_PROGRAM_BINARY_SIZES:
	case CL_PROGRAM_BINARIES:
		__atomic_store_n(&w->app_read, 1, __ATOMIC_RELEASE);
		return kc_program_info(kc_real(w), param, size, value, size_ret);
	default:
		return kc_program_info(kc_real(w), param, size, value, size_ret);
	}
}

static cl_int CL_API_CALL kc_clGetProgramBuildInfo(cl_program p, cl_device_id d, cl_program_build_info param,
                                                   size_t size, void *value, size_t *size_ret) {
	kc_program *w = kc_wrapper(p);
	if (w == NULL) {
		if (param == CL_PROGRAM_BUILD_LOG && kc_any_linked()) {
			return kcGoLinkedLog(p, d, size, value, size_ret);
		}
		return kc_target->clGetProgramBuildInfo(p, d, param, size, value, size_ret);
	}
	int cached = __atomic_load_n(&w->cached, __ATOMIC_ACQUIRE);
	if (cached && kc_go() && (param == CL_PROGRAM_BUILD_LOG || param == CL_PROGRAM_BUILD_OPTIONS)) {
		// The compiler's log of the build that made the cached binary, and
		// the options the application gave: the driver compiled nothing
		// from them in this process.
		return kcGoBuildInfo(w, d, param, size, value, size_ret);
	}
	if (cached == KC_CACHED_OBJECT) {
		// A program made from a compiled object was never compiled here;
		// the application compiled it, successfully, into an object,
		// whatever type the driver gives a program made from its binary.
		cl_build_status ok = CL_BUILD_SUCCESS;
		cl_program_binary_type object = CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT;
		switch (param) {
		case CL_PROGRAM_BUILD_STATUS:
			return kc_info_value(&ok, sizeof ok, size, value, size_ret);
		case CL_PROGRAM_BINARY_TYPE:
			return kc_info_value(&object, sizeof object, size, value, size_ret);
		}
	}
	return kc_target->clGetProgramBuildInfo(kc_real(w), d, param, size, value, size_ret);
}

static cl_kernel CL_API_CALL kc_clCreateKernel(cl_program p, const char *name, cl_int *err) {
	return kc_target->clCreateKernel(kc_translate(p), name, err);
}

static cl_int CL_API_CALL kc_clCreateKernelsInProgram(cl_program p, cl_uint n, cl_kernel *ks, cl_uint *n_ret) {
	return kc_target->clCreateKernelsInProgram(kc_translate(p), n, ks, n_ret);
}

static cl_int CL_API_CALL kc_clSetProgramReleaseCallback(cl_program p, void(CL_CALLBACK *notify)(cl_program, void *),
                                                         void *user_data) {
	kc_program *w = kc_wrapper(p);
	if (w == NULL) {
		return kc_target->clSetProgramReleaseCallback(p, notify, user_data);
	}
	// The driver decides whether it supports release callbacks; where it
	// does, the callback belongs to the application's source program.
	return kc_target->clSetProgramReleaseCallback(w->source, notify, user_data);
}

static cl_int CL_API_CALL kc_clSetProgramSpecializationConstant(cl_program p, cl_uint id, size_t size,
                                                                const void *value) {
	return kc_target->clSetProgramSpecializationConstant(kc_translate(p), id, size, value);
}

// kc_owner finds the live handle whose source or adopted programs include r.
static cl_program kc_owner(cl_program r) {
	cl_program out = r;
	pthread_mutex_lock(&kc_live_mu);
	for (kc_program *w = kc_live; w != NULL && out == r; w = w->next) {
		if (w->source == r) {
			out = (cl_program)w;
			break;
		}
		pthread_mutex_lock(&w->mu);
		for (int i = 0; i < w->nowned; i++) {
			if (w->owned[i] == r) {
				out = (cl_program)w;
				break;
			}
		}
		pthread_mutex_unlock(&w->mu);
	}
	pthread_mutex_unlock(&kc_live_mu);
	return out;
}

static cl_int CL_API_CALL kc_clGetKernelInfo(cl_kernel k, cl_kernel_info param, size_t size, void *value,
                                             size_t *size_ret) {
	cl_int err = kc_target->clGetKernelInfo(k, param, size, value, size_ret);
	if (err == CL_SUCCESS && param == CL_KERNEL_PROGRAM && value != NULL && size >= sizeof(cl_program)) {
		cl_program r;
		memcpy(&r, value, sizeof r);
		r = kc_owner(r);
		memcpy(value, &r, sizeof r);
	}
	return err;
}

CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param, size_t size, void *value, size_t *size_ret) {
	static const char name[] = "kcache: JIT kernel cache";
	const void *src;
	size_t n;
	cl_layer_api_version version = CL_LAYER_API_VERSION_100;
	switch (param) {
	case CL_LAYER_API_VERSION:
		src = &version;
		n = sizeof version;
		break;
	case CL_LAYER_NAME:
		src = name;
		n = sizeof name;
		break;
	default:
		return CL_INVALID_VALUE;
	}
	return kc_info_value(src, n, size, value, size_ret);
}

// Pending programs are the driver's programs whose binaries the Go half
// has still to store, each with whether a kernel of its has been launched
// since. The binary is read on the application's own thread, at a call
// where the driver is certainly alive and the launches before it are
// complete: the first synchronisation (clFinish, clWaitForEvents, a
// blocking read or map) after a launch, or the program's last release.
// Never at exit, nor from a thread of the layer's: by the time exit
// handlers run, the driver's compiler may be destroyed (PoCL's clang
// statics are), and reading a PoCL binary runs that compiler.
static pthread_mutex_t kc_pending_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kc_pending {
	cl_program real;
	int launched;
} *kc_pendings;                // guarded by kc_pending_mu
static int kc_npending;        // written under kc_pending_mu, read atomically
static int kc_pending_cap;     // guarded by kc_pending_mu

void kc_pending_add(cl_program real) {
	pthread_mutex_lock(&kc_pending_mu);
	if (kc_npending == kc_pending_cap) {
		int cap = kc_pending_cap ? 2 * kc_pending_cap : 16;
		struct kc_pending *grown = realloc(kc_pendings, cap * sizeof *grown);
		if (grown == NULL) { // the program is stored at its release, or never
			pthread_mutex_unlock(&kc_pending_mu);
			return;
		}
		kc_pendings = grown;
		kc_pending_cap = cap;
	}
	kc_pendings[kc_npending].real = real;
	kc_pendings[kc_npending].launched = 0;
	__atomic_store_n(&kc_npending, kc_npending + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&kc_pending_mu);
}

void kc_pending_remove(cl_program real) {
	pthread_mutex_lock(&kc_pending_mu);
	for (int i = 0; i < kc_npending; i++) {
		if (kc_pendings[i].real == real) {
			kc_pendings[i] = kc_pendings[kc_npending - 1];
			__atomic_store_n(&kc_npending, kc_npending - 1, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&kc_pending_mu);
}

int kc_pending_launched(cl_program real) {
	int launched = 0;
	pthread_mutex_lock(&kc_pending_mu);
	for (int i = 0; i < kc_npending; i++) {
		if (kc_pendings[i].real == real) {
			launched = kc_pendings[i].launched;
		}
	}
	pthread_mutex_unlock(&kc_pending_mu);
	return launched;
}

static int kc_any_pending(void) { return kc_go() && __atomic_load_n(&kc_npending, __ATOMIC_ACQUIRE) > 0; }

// kc_launched marks the program of k launched. With nothing pending, which
// is almost always, a launch costs one atomic load more.
static void kc_launched(cl_kernel k) {
	cl_program r;
	if (!kc_any_pending() || kc_target->clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof r, &r, NULL) != CL_SUCCESS) {
		return;
	}
	pthread_mutex_lock(&kc_pending_mu);
	for (int i = 0; i < kc_npending; i++) {
		if (kc_pendings[i].real == r) {
			kc_pendings[i].launched = 1;
		}
	}
	pthread_mutex_unlock(&kc_pending_mu);
}

// kc_sync is a commit point: the application has just waited for its
// commands, so the launches before are complete.
static void kc_sync(void) {
	if (kc_any_pending()) {
		kcGoSync();
	}
}

static cl_int CL_API_CALL kc_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dim, const size_t *offset,
                                                    const size_t *global, const size_t *local, cl_uint nev,
                                                    const cl_event *evs, cl_event *ev) {
	cl_int err = kc_target->clEnqueueNDRangeKernel(q, k, dim, offset, global, local, nev, evs, ev);
	if (err == CL_SUCCESS) {
		kc_launched(k);
	}
	return err;
}

static cl_int CL_API_CALL kc_clEnqueueTask(cl_command_queue q, cl_kernel k, cl_uint nev, const cl_event *evs,
                                          cl_event *ev) {
	cl_int err = kc_target->clEnqueueTask(q, k, nev, evs, ev);
	if (err == CL_SUCCESS) {
		kc_launched(k);
	}
	return err;
}

static cl_int CL_API_CALL kc_clFinish(cl_command_queue q) {
	cl_int err = kc_target->clFinish(q);
	kc_sync();
	return err;
}

static cl_int CL_API_CALL kc_clWaitForEvents(cl_uint n, const cl_event *evs) {
	cl_int err = kc_target->clWaitForEvents(n, evs);
	kc_sync();
	return err;
}

static cl_int CL_API_CALL kc_clEnqueueReadBuffer(cl_command_queue q, cl_mem b, cl_bool blocking, size_t off, size_t n,
                                                 void *ptr, cl_uint nev, const cl_event *evs, cl_event *ev) {
	cl_int err = kc_target->clEnqueueReadBuffer(q, b, blocking, off, n, ptr, nev, evs, ev);
	if (blocking) {
		kc_sync();
	}
	return err;
}

static cl_int CL_API_CALL kc_clEnqueueReadBufferRect(cl_command_queue q, cl_mem b, cl_bool blocking,
                                                     const size_t *boff, const size_t *hoff, const size_t *region,
                                                     size_t brow, size_t bslice, size_t hrow, size_t hslice, void *ptr,
                                                     cl_uint nev, const cl_event *evs, cl_event *ev) {
	cl_int err = kc_target->clEnqueueReadBufferRect(q, b, blocking, boff, hoff, region, brow, bslice, hrow, hslice,
	                                                ptr, nev, evs, ev);
	if (blocking) {
		kc_sync();
	}
	return err;
}

static cl_int CL_API_CALL kc_clEnqueueReadImage(cl_command_queue q, cl_mem im, cl_bool blocking, const size_t *origin,
                                                const size_t *region, size_t row, size_t slice, void *ptr, cl_uint nev,
                                                const cl_event *evs, cl_event *ev) {
	cl_int err = kc_target->clEnqueueReadImage(q, im, blocking, origin, region, row, slice, ptr, nev, evs, ev);
	if (blocking) {
		kc_sync();
	}
	return err;
}

static void *CL_API_CALL kc_clEnqueueMapBuffer(cl_command_queue q, cl_mem b, cl_bool blocking, cl_map_flags flags,
                                               size_t off, size_t n, cl_uint nev, const cl_event *evs, cl_event *ev,
                                               cl_int *err) {
	void *p = kc_target->clEnqueueMapBuffer(q, b, blocking, flags, off, n, nev, evs, ev, err);
	if (blocking) {
		kc_sync();
	}
	return p;
}

static void *CL_API_CALL kc_clEnqueueMapImage(cl_command_queue q, cl_mem im, cl_bool blocking, cl_map_flags flags,
                                              const size_t *origin, const size_t *region, size_t *row, size_t *slice,
                                              cl_uint nev, const cl_event *evs, cl_event *ev, cl_int *err) {
	void *p = kc_target->clEnqueueMapImage(q, im, blocking, flags, origin, region, row, slice, nev, evs, ev, err);
	if (blocking) {
		kc_sync();
	}
	return p;
}

// kc_atexit gives up what is still pending and merges the process's
// counters; it never calls the driver (see kc_pendings).
static void kc_atexit(void) {
	if (kc_go()) {
		kcGoExit();
	}
}

CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint num_entries, const struct _cl_icd_dispatch *target,
                                            cl_uint *num_entries_ret, const struct _cl_icd_dispatch **layer) {
	const cl_uint need = sizeof(struct _cl_icd_dispatch) / sizeof(void *);
	if (target == NULL || num_entries_ret == NULL || layer == NULL) {
		return CL_INVALID_VALUE;
	}
	// A loader with a shorter table than ours: copy what it has and leave
	// the rest empty, as the loader would.
	memset(&kc_dispatch, 0, sizeof kc_dispatch);
	memcpy(&kc_dispatch, target, (num_entries < need ? num_entries : need) * sizeof(void *));
	kc_target = target;
	// Both handlers are set here, on the application's thread, before the
	// Go half starts: each asks kc_go, which is false in a child and waits
	// for the start at exit.
	atexit(kc_atexit);
	pthread_atfork(NULL, NULL, kc_on_fork);
	kc_start();
	kc_dispatch.clGetDeviceIDs = kc_clGetDeviceIDs;
	kc_dispatch.clCreateContext = kc_clCreateContext;
	kc_dispatch.clCreateContextFromType = kc_clCreateContextFromType;
	kc_dispatch.clCreateProgramWithSource = kc_clCreateProgramWithSource;
	kc_dispatch.clRetainProgram = kc_clRetainProgram;
	kc_dispatch.clReleaseProgram = kc_clReleaseProgram;
	kc_dispatch.clBuildProgram = kc_clBuildProgram;
	kc_dispatch.clCompileProgram = kc_clCompileProgram;
	kc_dispatch.clLinkProgram = kc_clLinkProgram;
	kc_dispatch.clCreateProgramWithBinary = kc_clCreateProgramWithBinary;
	if (kc_dispatch.clCreateProgramWithIL != NULL) { // a loader of OpenCL 2.1 or later
		kc_dispatch.clCreateProgramWithIL = kc_clCreateProgramWithIL;
	}
	kc_dispatch.clGetProgramInfo = kc_clGetProgramInfo;
	kc_dispatch.clGetProgramBuildInfo = kc_clGetProgramBuildInfo;
	kc_dispatch.clCreateKernel = kc_clCreateKernel;
	kc_dispatch.clCreateKernelsInProgram = kc_clCreateKernelsInProgram;
	kc_dispatch.clSetProgramReleaseCallback = kc_clSetProgramReleaseCallback;
	kc_dispatch.clSetProgramSpecializationConstant = kc_clSetProgramSpecializationConstant;
	kc_dispatch.clGetKernelInfo = kc_clGetKernelInfo;
	kc_dispatch.clEnqueueNDRangeKernel = kc_clEnqueueNDRangeKernel;
	kc_dispatch.clEnqueueTask = kc_clEnqueueTask;
	kc_dispatch.clFinish = kc_clFinish;
	kc_dispatch.clWaitForEvents = kc_clWaitForEvents;
	kc_dispatch.clEnqueueReadBuffer = kc_clEnqueueReadBuffer;
	kc_dispatch.clEnqueueReadBufferRect = kc_clEnqueueReadBufferRect;
	kc_dispatch.clEnqueueReadImage = kc_clEnqueueReadImage;
	kc_dispatch.clEnqueueMapBuffer = kc_clEnqueueMapBuffer;
	kc_dispatch.clEnqueueMapImage = kc_clEnqueueMapImage;
	*num_entries_ret = need;
	*layer = &kc_dispatch;
	return CL_SUCCESS;
}

cl_int kc_t_get_program_info(cl_program p, cl_program_info param, size_t size, void *value, size_t *size_ret) {
	return kc_program_info(p, param, size, value, size_ret);
}

cl_int kc_t_get_program_build_info(cl_program p, cl_device_id d, cl_program_build_info param, size_t size, void *value,
                                   size_t *size_ret) {
	return kc_target->clGetProgramBuildInfo(p, d, param, size, value, size_ret);
}

cl_int kc_t_build_program(cl_program p, cl_uint nd, const cl_device_id *devs, const char *options) {
	return kc_target->clBuildProgram(p, nd, devs, options, NULL, NULL);
}

cl_int kc_t_compile_program(cl_program p, cl_uint nd, const cl_device_id *devs, const char *options) {
	return kc_target->clCompileProgram(p, nd, devs, options, 0, NULL, NULL, NULL, NULL);
}

cl_program kc_t_create_program_with_binary(cl_context c, cl_uint nd, const cl_device_id *devs, const size_t *lengths,
                                           const unsigned char **bins, cl_int *status, cl_int *err) {
	return kc_target->clCreateProgramWithBinary(c, nd, devs, lengths, bins, status, err);
}

cl_int kc_t_release_program(cl_program p) { return kc_target->clReleaseProgram(p); }
cl_int kc_t_retain_program(cl_program p) { return kc_target->clRetainProgram(p); }

cl_program kc_t_link_program(cl_context c, cl_uint nd, const cl_device_id *devs, const char *options, cl_uint np, const cl_program *ps, cl_int *err) {
	return kc_target->clLinkProgram(c, nd, devs, options, np, ps, NULL, NULL, err);
}

cl_int kc_t_get_device_info(cl_device_id d, cl_device_info param, size_t size, void *value, size_t *size_ret) {
	return kc_target->clGetDeviceInfo(d, param, size, value, size_ret);
}

cl_int kc_t_get_platform_info(cl_platform_id p, cl_platform_info param, size_t size, void *value, size_t *size_ret) {
	return kc_target->clGetPlatformInfo(p, param, size, value, size_ret);
}

