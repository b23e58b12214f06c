// buildinfo prints what clGetProgramBuildInfo answers (status, options,
// binary type, log) for a program whose build warns, a program compiled
// alone, and a program whose build fails, each right after its build and
// again after its kernels ran and its binary was read: the Go test, and the
// run on NVIDIA's driver, compare the lines with and without the layer.
// The log is queried as applications do (its size, then the text) and
// again into a fixed buffer. Exit status 1 when the warning's log lacks the
// warning; 2 without a device.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The warning is one every OpenCL C front end gives (#warning); the
// noinline kernel makes NVIDIA's compiler warn as well.
static const char *warns = "#warning kcache-build-log-warning\n"
                           "__attribute__((noinline)) kernel void scale(global int *a) { a[get_global_id(0)] *= 2; }\n"
                           "kernel void one(global int *a) { int unused; scale(a); a[get_global_id(0)] += 1; }\n";
static const char *alone = "#warning kcache-compile-log-warning\n"
                           "kernel void thrice(global int *a) { a[get_global_id(0)] *= 3; }\n";
static const char *broken = "kernel void broken(global int *a) { a[0] = undeclared_name; }\n";

static char *build_string(cl_program p, cl_device_id d, cl_program_build_info param, size_t *size) {
	size_t n = 0;
	cl_int err = clGetProgramBuildInfo(p, d, param, 0, NULL, &n);
	char *s = calloc(n + 1, 1);
	if (err == CL_SUCCESS && n > 0) {
		err = clGetProgramBuildInfo(p, d, param, n, s, NULL);
	}
	if (err != CL_SUCCESS) {
		printf("  query %#x: error %d\n", (unsigned)param, err);
	}
	*size = n;
	return s;
}

// info prints every build query of p for d; a log query into a fixed
// buffer must give the same text.
static int info(const char *what, cl_program p, cl_device_id d) {
	cl_build_status status = 99;
	cl_program_binary_type bt = 99;
	size_t n;
	clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, NULL);
	clGetProgramBuildInfo(p, d, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL);
	char *opts = build_string(p, d, CL_PROGRAM_BUILD_OPTIONS, &n);
	printf("%s: status %d, binary type %llu, options [%s]\n", what, status, (unsigned long long)bt, opts);
	char *log = build_string(p, d, CL_PROGRAM_BUILD_LOG, &n);
	static char fixed[1 << 16];
	size_t m = 0;
	memset(fixed, 0, sizeof fixed);
	cl_int err = clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, sizeof fixed - 1, fixed, &m);
	printf("%s: log size %zu, again %zu (%d), same text %d\n%s: log [%s]\n", what, n, m, err,
	       strcmp(fixed, log) == 0, what, log);
	int warned = strstr(log, "kcache-") != NULL;
	free(opts);
	free(log);
	return warned;
}

// launch runs every kernel of p once over 16 items of buf and reads buf
// back, so that the driver's program is complete before its binary is read.
static void launch(cl_command_queue q, cl_program p, cl_mem buf) {
	cl_kernel ks[4];
	cl_uint nk = 0;
	clCreateKernelsInProgram(p, 4, ks, &nk);
	for (cl_uint i = 0; i < nk; i++) {
		size_t n = 16;
		clSetKernelArg(ks[i], 0, sizeof buf, &buf);
		clEnqueueNDRangeKernel(q, ks[i], 1, NULL, &n, NULL, 0, NULL, NULL);
		clReleaseKernel(ks[i]);
	}
	int out[16];
	clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
	printf("kernels %u, out[0] %d\n", nk, out[0]);
}

static void binary_size(cl_program p) {
	size_t n = 0;
	cl_int err = clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL);
	printf("binary: %d, present %d\n", err, n > 0);
}

int main(void) {
	cl_platform_id pl;
	cl_device_id dev;
	cl_int err;
	if (clGetPlatformIDs(1, &pl, NULL) != CL_SUCCESS || clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
		printf("no OpenCL device\n");
		return 2;
	}
	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
	cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 16 * sizeof(int), NULL, &err);
	int zero[16] = {0};
	clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, sizeof zero, zero, 0, NULL, NULL);

	cl_program p = clCreateProgramWithSource(ctx, 1, &warns, NULL, &err);
	err = clBuildProgram(p, 1, &dev, "-DKCACHE_OPT=1", NULL, NULL);
	printf("build: %d\n", err);
	int warned = info("built", p, dev);
	launch(q, p, buf);
	binary_size(p);
	info("built, after launch", p, dev);

	cl_program a = clCreateProgramWithSource(ctx, 1, &alone, NULL, &err);
	err = clCompileProgram(a, 1, &dev, "-cl-std=CL1.2", 0, NULL, NULL, NULL, NULL);
	printf("compile: %d\n", err);
	info("compiled", a, dev);
	cl_program linked = clLinkProgram(ctx, 1, &dev, NULL, 1, &a, NULL, NULL, &err);
	printf("link: %d\n", err);
	info("linked", linked, dev);
	launch(q, linked, buf);
	info("compiled, after link", a, dev);

	cl_program bad = clCreateProgramWithSource(ctx, 1, &broken, NULL, &err);
	err = clBuildProgram(bad, 1, &dev, "-DKCACHE_OPT=2", NULL, NULL);
	printf("broken build: %d\n", err);
	info("broken", bad, dev);

	clReleaseProgram(bad);
	clReleaseProgram(linked);
	clReleaseProgram(a);
	clReleaseProgram(p);
	clReleaseMemObject(buf);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	return !warned;
}
