// norelease builds a program from source, launches its kernel, reads the
// result and returns from main without releasing anything, as OpenCV and
// GEGL do: whatever the layer still has to store must be stored before
// the exit handlers run, which tear the driver's compiler down. It prints
// the result; exit status 1 on a wrong one.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>

static const char *src = "kernel void twice(global int *a) { size_t i = get_global_id(0); a[i] = 2 * a[i] + 1; }\n";

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
	cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
	if (clBuildProgram(p, 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
		printf("build failed\n");
		return 1;
	}
	cl_kernel k = clCreateKernel(p, "twice", &err);
	int a[64];
	for (int i = 0; i < 64; i++) {
		a[i] = i;
	}
	cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof a, a, &err);
	clSetKernelArg(k, 0, sizeof buf, &buf);
	size_t n = 64, local = 8;
	err = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, &local, 0, NULL, NULL);
	err |= clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof a, a, 0, NULL, NULL);
	if (err != CL_SUCCESS) {
		printf("enqueue failed: %d\n", err);
		return 1;
	}
	for (int i = 0; i < 64; i++) {
		if (a[i] != 2 * i + 1) {
			printf("element %d is %d\n", i, a[i]);
			return 1;
		}
	}
	printf("twice: %d %d\n", a[0], a[63]);
	return 0; // nothing released: the exit handlers find the program alive
}
