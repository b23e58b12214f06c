// buildlog builds a program whose compile warns and prints the build log
// the application sees: the driver's own on a miss, the stored one on a
// hit. Exit status 1 when the log lacks the warning.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src = "#warning kcache-build-log-warning\n"
                         "kernel void one(global int *a) { a[get_global_id(0)] = 1; }\n";

int main(void) {
	cl_platform_id pl;
	cl_device_id dev;
	cl_int err;
	if (clGetPlatformIDs(1, &pl, NULL) != CL_SUCCESS || clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
		printf("no OpenCL device\n");
		return 2;
	}
	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
	err = clBuildProgram(p, 1, &dev, "", NULL, NULL);
	size_t n = 0;
	clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
	char *log = calloc(n + 1, 1);
	clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL);
	printf("build: %d\nlog size: %zu\nlog: [%s]\n", err, n, log);
	clReleaseProgram(p);
	clReleaseContext(ctx);
	return strstr(log, "kcache-build-log-warning") == NULL;
}
