// early exercises the moments around the layer's start, which runs on a
// thread of its own beside the application's: "exit" returns from main
// right after the loader's first call, while that start may still be under
// way; "fork" forks right after it, and child and parent each build and run
// a program (the child through the driver alone). It prints each result;
// exit status 1 on a wrong one.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *src = "kernel void inc(global int *a) { size_t i = get_global_id(0); a[i] = a[i] + 3; }\n";

static int run(cl_platform_id pl, const char *who) {
	cl_device_id dev;
	cl_int err;
	if (clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
		printf("%s: no device\n", who);
		return 1;
	}
	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
	cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
	if (clBuildProgram(p, 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
		printf("%s: build failed\n", who);
		return 1;
	}
	cl_kernel k = clCreateKernel(p, "inc", &err);
	int a[16];
	for (int i = 0; i < 16; i++) {
		a[i] = i;
	}
	cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof a, a, &err);
	clSetKernelArg(k, 0, sizeof buf, &buf);
	size_t n = 16;
	err = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
	err |= clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof a, a, 0, NULL, NULL);
	if (err != CL_SUCCESS || a[0] != 3 || a[15] != 18) {
		printf("%s: wrong result (%d)\n", who, err);
		return 1;
	}
	printf("%s: %d %d\n", who, a[0], a[15]);
	clReleaseMemObject(buf);
	clReleaseKernel(k);
	clReleaseProgram(p);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	return 0;
}

int main(int argc, char **argv) {
	cl_platform_id pl;
	if (clGetPlatformIDs(1, &pl, NULL) != CL_SUCCESS) {
		printf("no OpenCL platform\n");
		return 2;
	}
	if (argc > 1 && strcmp(argv[1], "exit") == 0) {
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "fork") == 0) {
		fflush(stdout);
		pid_t child = fork();
		if (child == 0) {
			int status = run(pl, "child");
			fflush(stdout);
			_exit(status);
		}
		int status = 0;
		waitpid(child, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			printf("child failed: status %d\n", status);
			return 1;
		}
	}
	return run(pl, "parent");
}
