// passthrough measures what the kcache layer costs on calls it does not
// cache: it times loops of OpenCL calls on a program made from a binary
// (which the layer passes through) and on a program made from source (the
// layer's own handle, translated on every call), and of calls the layer
// does not intercept at all. Run it with and without OPENCL_LAYERS.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// TIME prints the fastest of five timed loops: on a shared machine the
// minimum is the estimate least disturbed by other processes.
#define TIME(label, n, body)                                                                                           \
	do {                                                                                                           \
		double best = 1e300;                                                                                   \
		for (int rep = 0; rep < 5; rep++) {                                                                    \
			double t0 = now();                                                                             \
			for (int i = 0; i < (n); i++) {                                                                \
				body;                                                                                  \
			}                                                                                              \
			double t = (now() - t0) / (n);                                                                 \
			best = t < best ? t : best;                                                                    \
		}                                                                                                      \
		printf("%-48s %8.1f ns/call\n", label, best);                                                          \
	} while (0)

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 200000;
	cl_platform_id pl;
	cl_device_id dev;
	cl_int err;
	clGetPlatformIDs(1, &pl, NULL);
	clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &dev, NULL);
	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	const char *src = "kernel void k(global int *a, int v) { a[get_global_id(0)] = v; }\n";
	cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
	clBuildProgram(p, 1, &dev, "", NULL, NULL);
	size_t size;
	clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL);
	unsigned char *bin = malloc(size);
	clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL);
	cl_program b = clCreateProgramWithBinary(ctx, 1, &dev, &size, (const unsigned char **)&bin, NULL, &err);
	clBuildProgram(b, 1, &dev, "", NULL, NULL);
	cl_kernel k = clCreateKernel(p, "k", &err);
	cl_uint refs;
	int v = 1;
	TIME("clGetProgramInfo, program from a binary", n, clGetProgramInfo(b, CL_PROGRAM_REFERENCE_COUNT, sizeof refs, &refs, NULL));
	TIME("clGetProgramInfo, program from source", n, clGetProgramInfo(p, CL_PROGRAM_NUM_DEVICES, sizeof refs, &refs, NULL));
	TIME("clRetainProgram+clReleaseProgram, from a binary", n, (clRetainProgram(b), clReleaseProgram(b)));
	TIME("clRetainProgram+clReleaseProgram, from source", n, (clRetainProgram(p), clReleaseProgram(p)));
	TIME("clCreateKernel+clReleaseKernel, from a binary", n / 10, clReleaseKernel(clCreateKernel(b, "k", &err)));
	TIME("clCreateKernel+clReleaseKernel, from source", n / 10, clReleaseKernel(clCreateKernel(p, "k", &err)));
	TIME("clSetKernelArg (not intercepted)", n, clSetKernelArg(k, 1, sizeof v, &v));
	clReleaseKernel(k);
	clReleaseProgram(b);
	clReleaseProgram(p);
	clReleaseContext(ctx);
	return 0;
}
