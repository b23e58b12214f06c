// handles checks that an application's program handle behaves as the
// OpenCL specification says, with or without the kcache layer: it prints
// one line per check, and the Go test compares the lines of runs with and
// without the layer. Exit status 1 on a failed check.
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_2_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static int failed;

#define CHECK(cond, ...)                                                                                               \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			printf("FAIL line %d: ", __LINE__);                                                            \
			printf(__VA_ARGS__);                                                                           \
			printf("\n");                                                                                  \
			failed = 1;                                                                                    \
		}                                                                                                      \
	} while (0)

static const char *part1 = "#define SCALE 3\n"
                           "kernel void scale(global int *a) { size_t i = get_global_id(0); a[i] = a[i] * SCALE + OFFSET; }\n";
static const char *part2 = "kernel void fill(global int *a, int v) { a[get_global_id(0)] = v; }\n";
static const char *broken = "kernel void broken(global int *a) { a[0] = undeclared_name; }\n";

static cl_program notified;
static void CL_CALLBACK on_build(cl_program p, void *user_data) {
	notified = p;
	*(int *)user_data = 1;
}
static void CL_CALLBACK on_release(cl_program p, void *user_data) { (void)p, (void)user_data; }

static cl_uint refcount(cl_program p) {
	cl_uint n = 0;
	clGetProgramInfo(p, CL_PROGRAM_REFERENCE_COUNT, sizeof n, &n, NULL);
	return n;
}

static char *program_string(cl_program p, cl_program_info param) {
	size_t n = 0;
	clGetProgramInfo(p, param, 0, NULL, &n);
	char *s = calloc(n + 1, 1);
	clGetProgramInfo(p, param, n, s, NULL);
	return s;
}

static char *build_log(cl_program p, cl_device_id d) {
	size_t n = 0;
	clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
	char *s = calloc(n + 1, 1);
	clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, s, NULL);
	return s;
}

// run launches k over n items of buf and checks every element is want.
static void run(cl_command_queue q, cl_kernel k, cl_mem buf, size_t n, int want, const char *what) {
	cl_int err = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
	int out[16];
	err |= clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
	CHECK(err == CL_SUCCESS, "%s: enqueue %d", what, err);
	for (size_t i = 0; i < n; i++) {
		CHECK(out[i] == want, "%s: element %zu is %d, want %d", what, i, out[i], want);
	}
	printf("%s: %d\n", what, out[0]);
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

	// Several strings, as applications pass them.
	const char *parts[] = {part1, part2};
	cl_program p = clCreateProgramWithSource(ctx, 2, parts, NULL, &err);
	CHECK(err == CL_SUCCESS && p != NULL, "create: %d", err);
	printf("refcount after create: %u\n", refcount(p));
	CHECK(clRetainProgram(p) == CL_SUCCESS, "retain");
	printf("refcount after retain: %u\n", refcount(p));
	CHECK(clReleaseProgram(p) == CL_SUCCESS, "release");
	printf("refcount after release: %u\n", refcount(p));

	char *src = program_string(p, CL_PROGRAM_SOURCE);
	char *want = calloc(strlen(part1) + strlen(part2) + 1, 1);
	strcat(strcat(want, part1), part2);
	CHECK(strcmp(src, want) == 0, "CL_PROGRAM_SOURCE is not the joined strings: %s", src);
	printf("source length: %zu\n", strlen(src));

	cl_context got_ctx = NULL;
	clGetProgramInfo(p, CL_PROGRAM_CONTEXT, sizeof got_ctx, &got_ctx, NULL);
	CHECK(got_ctx == ctx, "CL_PROGRAM_CONTEXT");

	cl_int cb = clSetProgramReleaseCallback(p, on_release, NULL);
	printf("clSetProgramReleaseCallback: %d\n", cb);

	int called = 0;
	err = clBuildProgram(p, 1, &dev, "-DOFFSET=1 -cl-fast-relaxed-math", on_build, &called);
	CHECK(err == CL_SUCCESS, "build: %d", err);
	CHECK(called && notified == p, "build callback: called %d with the application's handle %d", called, notified == p);
	cl_build_status status;
	clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, NULL);
	printf("build status: %d\n", status);
	char *opts = NULL;
	size_t n = 0;
	clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_OPTIONS, 0, NULL, &n);
	opts = calloc(n + 1, 1);
	clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_OPTIONS, n, opts, NULL);
	printf("build options: %s\n", opts);
	printf("build log: [%s]\n", build_log(p, dev));
	printf("kernel names: %s\n", program_string(p, CL_PROGRAM_KERNEL_NAMES));
	size_t nk = 0;
	clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL);
	printf("kernels: %zu\n", nk);
	cl_uint ndev = 0;
	clGetProgramInfo(p, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL);
	printf("devices: %u\n", ndev);
	cl_program_binary_type bt;
	clGetProgramBuildInfo(p, dev, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL);
	printf("binary type: %llu\n", (unsigned long long)bt);
	CHECK(refcount(p) == 1, "refcount after build %u", refcount(p));

	cl_kernel fill = clCreateKernel(p, "fill", &err);
	CHECK(err == CL_SUCCESS, "clCreateKernel: %d", err);
	cl_program kp = NULL;
	clGetKernelInfo(fill, CL_KERNEL_PROGRAM, sizeof kp, &kp, NULL);
	CHECK(kp == p, "CL_KERNEL_PROGRAM is not the application's handle");
	cl_kernel all[2];
	cl_uint nall = 0;
	err = clCreateKernelsInProgram(p, 2, all, &nall);
	CHECK(err == CL_SUCCESS && nall == 2, "clCreateKernelsInProgram: %d, %u", err, nall);
	for (cl_uint i = 0; i < nall; i++) {
		clGetKernelInfo(all[i], CL_KERNEL_PROGRAM, sizeof kp, &kp, NULL);
		CHECK(kp == p, "CL_KERNEL_PROGRAM of kernel %u", i);
		clReleaseKernel(all[i]);
	}
	cl_kernel scale = clCreateKernel(p, "scale", &err);
	int v = 5;
	clSetKernelArg(fill, 0, sizeof buf, &buf);
	clSetKernelArg(fill, 1, sizeof v, &v);
	run(q, fill, buf, 16, 5, "fill");
	clSetKernelArg(scale, 0, sizeof buf, &buf);
	run(q, scale, buf, 16, 16, "scale");

	// The binaries the application reads make a working program.
	size_t bsize = 0;
	clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bsize, &bsize, NULL);
	CHECK(bsize > 0, "CL_PROGRAM_BINARY_SIZES");
	unsigned char *bin = malloc(bsize);
	clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL);
	cl_int bstatus;
	cl_program fromBin = clCreateProgramWithBinary(ctx, 1, &dev, &bsize, (const unsigned char **)&bin, &bstatus, &err);
	CHECK(err == CL_SUCCESS, "clCreateProgramWithBinary: %d", err);
	CHECK(clBuildProgram(fromBin, 1, &dev, NULL, NULL, NULL) == CL_SUCCESS, "build from binary");
	cl_kernel fill2 = clCreateKernel(fromBin, "fill", &err);
	v = 9;
	clSetKernelArg(fill2, 0, sizeof buf, &buf);
	clSetKernelArg(fill2, 1, sizeof v, &v);
	run(q, fill2, buf, 16, 9, "fill from the binary");
	clGetKernelInfo(fill2, CL_KERNEL_PROGRAM, sizeof kp, &kp, NULL);
	CHECK(kp == fromBin, "CL_KERNEL_PROGRAM of a program from a binary");
	clReleaseKernel(fill2);
	clReleaseProgram(fromBin);

	// The application's last release: its kernels keep the program alive.
	CHECK(clReleaseProgram(p) == CL_SUCCESS, "last release");
	v = 7;
	clSetKernelArg(fill, 1, sizeof v, &v);
	run(q, fill, buf, 16, 7, "fill after the program's release");
	clGetKernelInfo(fill, CL_KERNEL_PROGRAM, sizeof kp, &kp, NULL);
	nk = 0;
	CHECK(clGetProgramInfo(kp, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL) == CL_SUCCESS && nk == 2,
	      "the kernel's program after release: %zu kernels", nk);
	clReleaseKernel(fill);
	clReleaseKernel(scale);

	// A build error is the driver's: its status and its log.
	cl_program bad = clCreateProgramWithSource(ctx, 1, &broken, NULL, &err);
	err = clBuildProgram(bad, 0, NULL, "", NULL, NULL);
	printf("broken build: %d\n", err);
	clGetProgramBuildInfo(bad, dev, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, NULL);
	printf("broken build status: %d\n", status);
	char *log = build_log(bad, dev);
	CHECK(strstr(log, "undeclared_name") != NULL, "broken build log: %s", log);
	printf("broken build log names the error: %d\n", strstr(log, "undeclared_name") != NULL);
	clReleaseProgram(bad);

	// Separate compilation and linking pass through, with a header program.
	const char *hdr = "#define TWICE(x) ((x) * 2)\n";
	const char *user = "#include \"twice.h\"\nkernel void twice(global int *a) { a[get_global_id(0)] = TWICE(a[get_global_id(0)]); }\n";
	cl_program hp = clCreateProgramWithSource(ctx, 1, &hdr, NULL, &err);
	cl_program up = clCreateProgramWithSource(ctx, 1, &user, NULL, &err);
	const char *names[] = {"twice.h"};
	err = clCompileProgram(up, 1, &dev, "", 1, &hp, names, NULL, NULL);
	CHECK(err == CL_SUCCESS, "clCompileProgram: %d", err);
	cl_program linked = clLinkProgram(ctx, 1, &dev, "", 1, &up, NULL, NULL, &err);
	CHECK(err == CL_SUCCESS && linked != NULL, "clLinkProgram: %d", err);
	cl_kernel twice = clCreateKernel(linked, "twice", &err);
	clSetKernelArg(twice, 0, sizeof buf, &buf);
	run(q, twice, buf, 16, 14, "twice from a linked program");
	clReleaseKernel(twice);
	clReleaseProgram(linked);
	clReleaseProgram(up);
	clReleaseProgram(hp);

	// A second build of the same program, with other options, rebuilds it.
	const char *vsrc = "kernel void v(global int *a) { a[get_global_id(0)] = V; }\n";
	cl_program vp = clCreateProgramWithSource(ctx, 1, &vsrc, NULL, &err);
	CHECK(clBuildProgram(vp, 1, &dev, "-DV=1", NULL, NULL) == CL_SUCCESS, "build V=1");
	cl_kernel vk = clCreateKernel(vp, "v", &err);
	clSetKernelArg(vk, 0, sizeof buf, &buf);
	run(q, vk, buf, 16, 1, "first build");
	clReleaseKernel(vk);
	CHECK(clBuildProgram(vp, 1, &dev, "-DV=2", NULL, NULL) == CL_SUCCESS, "rebuild V=2");
	vk = clCreateKernel(vp, "v", &err);
	clSetKernelArg(vk, 0, sizeof buf, &buf);
	run(q, vk, buf, 16, 2, "rebuild with other options");
	clReleaseKernel(vk);
	clReleaseProgram(vp);

	// Compiling a source program alone and linking it, as hashcat does.
	const char *alone = "kernel void thrice(global int *a) { a[get_global_id(0)] *= 3; }\n";
	cl_program ap = clCreateProgramWithSource(ctx, 1, &alone, NULL, &err);
	called = 0;
	err = clCompileProgram(ap, 1, &dev, "-cl-std=CL1.2", 0, NULL, NULL, on_build, &called);
	CHECK(err == CL_SUCCESS && called && notified == ap, "clCompileProgram alone: %d, callback %d", err, called);
	clGetProgramBuildInfo(ap, dev, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, NULL);
	printf("compile status: %d\n", status);
	clGetProgramBuildInfo(ap, dev, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL);
	printf("compiled binary type: %llu\n", (unsigned long long)bt);
	printf("compile log: [%s]\n", build_log(ap, dev));
	linked = clLinkProgram(ctx, 1, &dev, NULL, 1, &ap, NULL, NULL, &err);
	CHECK(err == CL_SUCCESS && linked != NULL, "clLinkProgram of a compiled program: %d", err);
	cl_kernel thrice = clCreateKernel(linked, "thrice", &err);
	clSetKernelArg(thrice, 0, sizeof buf, &buf);
	run(q, thrice, buf, 16, 6, "thrice from a compiled and linked program");
	// Time for the layer's delayed commit of the linked program, which a
	// process that exits sooner abandons.
	usleep(1500 * 1000);
	clReleaseKernel(thrice);
	clReleaseProgram(ap);
	clReleaseProgram(linked);

	clReleaseMemObject(buf);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	printf(failed ? "FAILED\n" : "PASS\n");
	return failed;
}
