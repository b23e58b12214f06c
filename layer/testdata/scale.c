/* scale builds the OpenCL C file named by its first argument (with the
 * build options of its second, if any) and prints what its kernel
 * scale(__global float *out) writes to out[0]: the value of SCALE the
 * compiler saw. The layer's key-exactness tests compare it with and
 * without the layer. With SCALE_SETENV=NAME=VALUE in its environment it
 * builds another program first, then sets NAME to VALUE; with
 * SCALE_UNSETENV too, it then builds a third program and unsets NAME.
 * With SCALE_READ_BINARY it reads the program's binary after the build,
 * as applications that keep binaries of their own do. With SCALE_LINK it
 * compiles the program and links it alone (clCompileProgram, then
 * clLinkProgram) instead of building it; SCALE_LINK_SETENV=NAME=VALUE
 * then sets NAME to VALUE between the two. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path) {
	FILE *f = fopen(path, "rb");
	if (!f) { perror(path); exit(1); }
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc(n + 1);
	if (fread(s, 1, n, f) != (size_t)n) { perror(path); exit(1); }
	s[n] = 0;
	fclose(f);
	return s;
}

#define CHECK(what, err) if ((err) != CL_SUCCESS) { fprintf(stderr, "%s: %d\n", what, (int)(err)); return 1; }

int main(int argc, char **argv) {
	if (argc < 2) { fprintf(stderr, "usage: scale FILE.cl [OPTIONS]\n"); return 2; }
	const char *src = slurp(argv[1]);
	cl_platform_id platform;
	cl_device_id dev;
	cl_int err = clGetPlatformIDs(1, &platform, NULL);
	CHECK("clGetPlatformIDs", err);
	err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, NULL);
	CHECK("clGetDeviceIDs", err);
	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	CHECK("clCreateContext", err);
	cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
	CHECK("clCreateCommandQueue", err);
	const char *set = getenv("SCALE_SETENV");
	if (set != NULL) {
		/* NAME=VALUE is set once a first program is built (the layer has
		 * started by then), as an application may set a driver's
		 * variable at run time. */
		const char *first = "__kernel void first(__global float *out) { out[0] = 0; }\n";
		cl_program f = clCreateProgramWithSource(ctx, 1, &first, NULL, &err);
		CHECK("clCreateProgramWithSource", err);
		CHECK("clBuildProgram", clBuildProgram(f, 1, &dev, "", NULL, NULL));
		clReleaseProgram(f);
		char *kv = strdup(set), *eq = strchr(kv, '=');
		if (eq == NULL) { fprintf(stderr, "SCALE_SETENV: want NAME=VALUE\n"); return 2; }
		*eq = 0;
		setenv(kv, eq + 1, 1);
		if (getenv("SCALE_UNSETENV") != NULL) {
			const char *second = "__kernel void second(__global float *out) { out[0] = 0; }\n";
			cl_program s = clCreateProgramWithSource(ctx, 1, &second, NULL, &err);
			CHECK("clCreateProgramWithSource", err);
			CHECK("clBuildProgram", clBuildProgram(s, 1, &dev, "", NULL, NULL));
			clReleaseProgram(s);
			unsetenv(kv);
		}
	}
	cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
	CHECK("clCreateProgramWithSource", err);
	if (getenv("SCALE_LINK") != NULL) {
		/* Compiled, then linked alone: the layer's link step. */
		err = clCompileProgram(p, 1, &dev, argc > 2 ? argv[2] : "", 0, NULL, NULL, NULL, NULL);
		const char *lset = getenv("SCALE_LINK_SETENV");
		if (err == CL_SUCCESS && lset != NULL) {
			/* NAME=VALUE set between the compile and the link. */
			char *kv = strdup(lset), *eq = strchr(kv, '=');
			if (eq == NULL) { fprintf(stderr, "SCALE_LINK_SETENV: want NAME=VALUE\n"); return 2; }
			*eq = 0;
			setenv(kv, eq + 1, 1);
		}
		if (err == CL_SUCCESS) {
			cl_program linked = clLinkProgram(ctx, 1, &dev, "", 1, &p, NULL, NULL, &err);
			if (err == CL_SUCCESS) {
				clReleaseProgram(p);
				p = linked;
			}
		}
	} else {
		err = clBuildProgram(p, 1, &dev, argc > 2 ? argv[2] : "", NULL, NULL);
	}
	if (err != CL_SUCCESS) {
		char log[8192] = "";
		clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
		fprintf(stderr, "build: %d\n%s\n", (int)err, log);
		return 1;
	}
	if (getenv("SCALE_READ_BINARY") != NULL) {
		size_t size = 0;
		CHECK("clGetProgramInfo", clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL));
		unsigned char *bin = malloc(size ? size : 1);
		CHECK("clGetProgramInfo", clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL));
		free(bin);
	}
	cl_kernel k = clCreateKernel(p, "scale", &err);
	CHECK("clCreateKernel", err);
	cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(float), NULL, &err);
	CHECK("clCreateBuffer", err);
	clSetKernelArg(k, 0, sizeof out, &out);
	size_t one = 1;
	err = clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL);
	CHECK("clEnqueueNDRangeKernel", err);
	float v = 0;
	err = clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof v, &v, 0, NULL, NULL);
	CHECK("clEnqueueReadBuffer", err);
	printf("scale %.1f\n", v);
	clReleaseMemObject(out);
	clReleaseKernel(k);
	clReleaseProgram(p);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	return 0;
}
