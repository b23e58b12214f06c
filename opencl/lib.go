package opencl

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// ErrNoRuntime is wrapped by every error that means this machine cannot run
// OpenCL at all: the ICD loader library is missing, or it is present but no
// driver (platform) is registered with it. Callers use errors.Is to tell
// "fall back to another backend" apart from a real failure.
var ErrNoRuntime = errors.New("opencl: no OpenCL runtime")

// libraryNames are tried in order. The versioned soname comes first because
// the unversioned one only exists where the -dev package is installed.
var libraryNames = []string{"libOpenCL.so.1", "libOpenCL.so"}

const (
	installHint = "install an ICD loader and a driver, e.g. on Debian `apt-get install ocl-icd-libopencl1 pocl-opencl-icd`"
	driverHint  = "install a driver, e.g. on Debian `apt-get install pocl-opencl-icd` (CPU) or your GPU vendor's OpenCL ICD"
)

// runtimeError is a Load failure. It matches both ErrNoRuntime and the
// underlying cause, so the message can lead with what to install.
type runtimeError struct {
	msg   string
	cause error
}

func (e *runtimeError) Error() string   { return e.msg + ": " + e.cause.Error() }
func (e *runtimeError) Unwrap() []error { return []error{ErrNoRuntime, e.cause} }

var (
	loadOnce sync.Once
	loadErr  error // written once inside loadOnce, read-only afterwards
)

// Load opens the OpenCL ICD loader (libOpenCL.so.1) and resolves the entry
// points this package uses. It is safe to call from many goroutines; the work
// is done once and later calls return the first result. Every constructor in
// this package calls Load itself, so calling it directly is only needed to
// probe for OpenCL up front. The error wraps ErrNoRuntime when the library
// or a platform is missing, and names the packages to install.
func Load() error {
	loadOnce.Do(func() { loadErr = load(libraryNames) })
	return loadErr
}

// load does Load's work with the library names as a parameter, so tests can
// exercise the missing-library path.
func load(names []string) error {
	h, err := openLibrary(names)
	if err != nil {
		return &runtimeError{msg: "OpenCL runtime not found (libOpenCL.so.1): " + installHint, cause: err}
	}
	if err := registerAll(h); err != nil {
		return &runtimeError{msg: "OpenCL runtime unusable (libOpenCL.so.1)", cause: err}
	}
	return probePlatforms()
}

// probePlatforms makes a loader without drivers fail Load rather than every
// later call: ocl-icd reports that as CL_PLATFORM_NOT_FOUND_KHR or as zero
// platforms, depending on its version.
func probePlatforms() error {
	var n uint32
	code := clGetPlatformIDs(0, nil, &n)
	if code == CodePlatformNotFoundKHR || (code == 0 && n == 0) {
		return &runtimeError{msg: "no OpenCL platform found: the ICD loader is installed but no driver is registered in " + vendorsDir() + "; " + driverHint,
			cause: newError(CodePlatformNotFoundKHR, "clGetPlatformIDs")}
	}
	if code != 0 {
		return &runtimeError{msg: "OpenCL platform query failed", cause: newError(code, "clGetPlatformIDs")}
	}
	return nil
}

// vendorsDir names where the ICD loader looks for drivers: the directory
// OCL_ICD_VENDORS names (ocl-icd reads it), else the system's.
func vendorsDir() string {
	if d := os.Getenv("OCL_ICD_VENDORS"); d != "" {
		return d + " (OCL_ICD_VENDORS)"
	}
	return "/etc/OpenCL/vendors"
}

// entry is one C function to bind: fn points at the Go func variable.
// Optional entries are newer than OpenCL 1.2 and may be absent from an old
// loader; their variable stays nil and callers check before use.
type entry struct {
	fn       any
	name     string
	optional bool
}

func registerAll(h uintptr) error {
	for _, e := range entries() {
		sym, err := lookup(h, e.name)
		if err != nil {
			if e.optional {
				continue
			}
			return fmt.Errorf("missing symbol %s: %w", e.name, err)
		}
		bind(e.fn, sym)
	}
	return nil
}

// The C entry points. Handles (cl_platform_id, cl_context, ...) are uintptr;
// every pointer argument is an unsafe.Pointer or *T to memory that the C side
// only reads or writes during the call. No struct is passed by value and no
// callback is registered, so builds are synchronous.
var (
	clGetPlatformIDs  func(n uint32, ids *uintptr, num *uint32) int32
	clGetPlatformInfo func(p uintptr, param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32
	clGetDeviceIDs    func(p uintptr, typ uint64, n uint32, ids *uintptr, num *uint32) int32
	clGetDeviceInfo   func(d uintptr, param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32

	clCreateContext  func(props *uintptr, n uint32, devs *uintptr, notify, user uintptr, errc *int32) uintptr
	clReleaseContext func(c uintptr) int32

	clCreateCommandQueue               func(c, d uintptr, props uint64, errc *int32) uintptr
	clCreateCommandQueueWithProperties func(c, d uintptr, props *uint64, errc *int32) uintptr // 2.0
	clReleaseCommandQueue              func(q uintptr) int32
	clFinish                           func(q uintptr) int32
	clFlush                            func(q uintptr) int32

	clCreateProgramWithSource func(c uintptr, n uint32, strs unsafe.Pointer, lens *uintptr, errc *int32) uintptr
	clCreateProgramWithBinary func(c uintptr, n uint32, devs *uintptr, lens *uintptr, bins unsafe.Pointer, status *int32, errc *int32) uintptr
	clCreateProgramWithIL     func(c uintptr, il unsafe.Pointer, n uintptr, errc *int32) uintptr // 2.1
	clBuildProgram            func(p uintptr, n uint32, devs *uintptr, opts string, notify, user uintptr) int32
	clCompileProgram          func(p uintptr, n uint32, devs *uintptr, opts string, nh uint32, hdrs *uintptr, names unsafe.Pointer, notify, user uintptr) int32
	clLinkProgram             func(c uintptr, n uint32, devs *uintptr, opts string, np uint32, progs *uintptr, notify, user uintptr, errc *int32) uintptr
	clGetProgramInfo          func(p uintptr, param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32
	clGetProgramBuildInfo     func(p, d uintptr, param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32
	clRetainProgram           func(p uintptr) int32
	clReleaseProgram          func(p uintptr) int32

	clCreateKernel           func(p uintptr, name string, errc *int32) uintptr
	clCloneKernel            func(k uintptr, errc *int32) uintptr // 2.1
	clReleaseKernel          func(k uintptr) int32
	clSetKernelArg           func(k uintptr, i uint32, size uintptr, val unsafe.Pointer) int32
	clGetKernelInfo          func(k uintptr, param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32
	clGetKernelWorkGroupInfo func(k, d uintptr, param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32

	clCreateBuffer         func(c uintptr, flags uint64, size uintptr, host unsafe.Pointer, errc *int32) uintptr
	clReleaseMemObject     func(m uintptr) int32
	clEnqueueReadBuffer    func(q, m uintptr, blocking uint32, off, size uintptr, ptr unsafe.Pointer, nw uint32, wait *uintptr, ev *uintptr) int32
	clEnqueueWriteBuffer   func(q, m uintptr, blocking uint32, off, size uintptr, ptr unsafe.Pointer, nw uint32, wait *uintptr, ev *uintptr) int32
	clEnqueueNDRangeKernel func(q, k uintptr, dims uint32, off, global, local *uintptr, nw uint32, wait *uintptr, ev *uintptr) int32

	clWaitForEvents         func(n uint32, evs *uintptr) int32
	clReleaseEvent          func(e uintptr) int32
	clGetEventInfo          func(e uintptr, param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32
	clGetEventProfilingInfo func(e uintptr, param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32
)

func entries() []entry {
	return []entry{
		{&clGetPlatformIDs, "clGetPlatformIDs", false},
		{&clGetPlatformInfo, "clGetPlatformInfo", false},
		{&clGetDeviceIDs, "clGetDeviceIDs", false},
		{&clGetDeviceInfo, "clGetDeviceInfo", false},
		{&clCreateContext, "clCreateContext", false},
		{&clReleaseContext, "clReleaseContext", false},
		{&clCreateCommandQueue, "clCreateCommandQueue", false},
		{&clCreateCommandQueueWithProperties, "clCreateCommandQueueWithProperties", true},
		{&clReleaseCommandQueue, "clReleaseCommandQueue", false},
		{&clFinish, "clFinish", false},
		{&clFlush, "clFlush", false},
		{&clCreateProgramWithSource, "clCreateProgramWithSource", false},
		{&clCreateProgramWithBinary, "clCreateProgramWithBinary", false},
		{&clCreateProgramWithIL, "clCreateProgramWithIL", true},
		{&clBuildProgram, "clBuildProgram", false},
		{&clCompileProgram, "clCompileProgram", true},
		{&clLinkProgram, "clLinkProgram", true},
		{&clGetProgramInfo, "clGetProgramInfo", false},
		{&clGetProgramBuildInfo, "clGetProgramBuildInfo", false},
		{&clRetainProgram, "clRetainProgram", false},
		{&clReleaseProgram, "clReleaseProgram", false},
		{&clCreateKernel, "clCreateKernel", false},
		{&clCloneKernel, "clCloneKernel", true},
		{&clReleaseKernel, "clReleaseKernel", false},
		{&clSetKernelArg, "clSetKernelArg", false},
		{&clGetKernelInfo, "clGetKernelInfo", false},
		{&clGetKernelWorkGroupInfo, "clGetKernelWorkGroupInfo", false},
		{&clCreateBuffer, "clCreateBuffer", false},
		{&clReleaseMemObject, "clReleaseMemObject", false},
		{&clEnqueueReadBuffer, "clEnqueueReadBuffer", false},
		{&clEnqueueWriteBuffer, "clEnqueueWriteBuffer", false},
		{&clEnqueueNDRangeKernel, "clEnqueueNDRangeKernel", false},
		{&clWaitForEvents, "clWaitForEvents", false},
		{&clReleaseEvent, "clReleaseEvent", false},
		{&clGetEventInfo, "clGetEventInfo", false},
		{&clGetEventProfilingInfo, "clGetEventProfilingInfo", false},
	}
}
