// twoorders builds two programs, in the order its argument names ("ab" or
// "ba"), and only then launches their kernels: two copies started at once
// in opposite orders each hold the build of one program while asking for
// the other's. It prints both results; exit status 1 on a wrong one.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>

static const char *srcs[2] = {
	"kernel void add(global int *a) { a[get_global_id(0)] += 3; }\n",
	"kernel void mul(global int *a) { a[get_global_id(0)] *= 5; }\n",
};
static const char *names[2] = {"add", "mul"};

int main(int argc, char **argv) {
	if (argc != 2 || (strcmp(argv[1], "ab") != 0 && strcmp(argv[1], "ba") != 0)) {
		printf("usage: twoorders ab|ba\n");
		return 2;
	}
	int first = argv[1][0] == 'b';
	cl_platform_id pl;
	cl_device_id dev;
	cl_int err;
	if (clGetPlatformIDs(1, &pl, NULL) != CL_SUCCESS || clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
		printf("no OpenCL device\n");
		return 2;
	}
	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
	cl_program ps[2];
	for (int i = 0; i < 2; i++) {
		int j = i ^ first;
		ps[j] = clCreateProgramWithSource(ctx, 1, &srcs[j], NULL, &err);
		if (clBuildProgram(ps[j], 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
			printf("build of %s failed\n", names[j]);
			return 1;
		}
	}
	int a[16];
	for (int i = 0; i < 16; i++) {
		a[i] = i;
	}
	cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof a, a, &err);
	size_t n = 16;
	for (int j = 0; j < 2; j++) {
		cl_kernel k = clCreateKernel(ps[j], names[j], &err);
		clSetKernelArg(k, 0, sizeof buf, &buf);
		err |= clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
		clReleaseKernel(k);
	}
	err |= clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof a, a, 0, NULL, NULL);
	if (err != CL_SUCCESS || a[0] != 15 || a[15] != 90) {
		printf("wrong result: %d, %d %d\n", err, a[0], a[15]);
		return 1;
	}
	printf("(i+3)*5: %d %d\n", a[0], a[15]);
	for (int j = 0; j < 2; j++) {
		clReleaseProgram(ps[j]);
	}
	clReleaseMemObject(buf);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	return 0;
}
