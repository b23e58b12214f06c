// blas runs a few CLBlast routines (Sgemm, Saxpy, Sdot) on small matrices
// of integers, which single precision holds exactly, and prints each
// result's sum: the layer's tests compare the lines with and without the
// layer. CLBlast builds its programs from source with clBuildProgram and
// keeps a per-process cache only, so every process compiles them again.
#define CL_TARGET_OPENCL_VERSION 120
#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>

#define N 64

static double sum(cl_command_queue q, cl_mem b, size_t n) {
	float *v = malloc(n * sizeof *v);
	clEnqueueReadBuffer(q, b, CL_TRUE, 0, n * sizeof *v, v, 0, NULL, NULL);
	double s = 0;
	for (size_t i = 0; i < n; i++) {
		s += v[i];
	}
	free(v);
	return s;
}

static cl_mem buffer(cl_context ctx, cl_command_queue q, size_t n, int seed) {
	float *v = malloc(n * sizeof *v);
	for (size_t i = 0; i < n; i++) {
		v[i] = (float)((i * 7 + seed) % 5);
	}
	cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * sizeof *v, NULL, NULL);
	clEnqueueWriteBuffer(q, b, CL_TRUE, 0, n * sizeof *v, v, 0, NULL, NULL);
	free(v);
	return b;
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
	cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
	cl_mem a = buffer(ctx, q, N * N, 1), b = buffer(ctx, q, N * N, 2), c = buffer(ctx, q, N * N, 3);
	CLBlastStatusCode s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, N, N, N, 1.0f, a, 0,
	                                   N, b, 0, N, 0.0f, c, 0, N, &q, NULL);
	printf("sgemm: %d, sum %.1f\n", s, s == CLBlastSuccess ? sum(q, c, N * N) : 0);
	s = CLBlastSaxpy(N * N, 2.0f, a, 0, 1, b, 0, 1, &q, NULL);
	printf("saxpy: %d, sum %.1f\n", s, s == CLBlastSuccess ? sum(q, b, N * N) : 0);
	cl_mem d = buffer(ctx, q, 1, 0);
	s = CLBlastSdot(N * N, d, 0, a, 0, 1, b, 0, 1, &q, NULL);
	printf("sdot: %d, sum %.1f\n", s, s == CLBlastSuccess ? sum(q, d, 1) : 0);
	return s != CLBlastSuccess;
}
