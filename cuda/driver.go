package cuda

import (
	"fmt"
	"sync"
	"unsafe"
)

// driverLibraries are tried in order: the versioned soname ships with the
// driver; the unversioned name exists only where a toolkit's stub or -dev
// package put it.
var driverLibraries = []string{"libcuda.so.1", "libcuda.so"}

// abiVersion is the CUDA release whose entry-point signatures this
// package declares (CUDA 12.0). cuGetProcAddress hands back, for each
// name, the version of the entry point that release called by that name:
// cuMemAlloc_v2, cuStreamDestroy_v2, cuDevicePrimaryCtxRelease_v2, and
// cuEventElapsedTime rather than CUDA 13's _v2. A driver older than 12.0
// is asked for its own version instead; the calls used here kept their
// signatures from 11.0 to 12.0.
const abiVersion = 12000

const driverHint = "install the NVIDIA driver (it provides libcuda.so.1)"

var (
	driverOnce sync.Once
	driverErr  error // written once inside driverOnce
	driverPath string
)

// Init loads the driver library, resolves its entry points and calls
// cuInit. It is safe from many goroutines; the work is done once. The
// error wraps ErrNoDriver when libcuda.so.1 is missing or unusable, and
// ErrNoDevice when the driver reports no GPU.
func Init() error {
	driverOnce.Do(func() { driverErr = loadDriver(driverLibraries) })
	return driverErr
}

func loadDriver(names []string) error {
	h, name, err := openLibrary(names)
	if err != nil {
		return fmt.Errorf("%w: libcuda.so.1 not found: %s: %w", ErrNoDriver, driverHint, err)
	}
	if err := resolveDriver(h); err != nil {
		return fmt.Errorf("%w: %s unusable: %w", ErrNoDriver, name, err)
	}
	if r := cuInit(0); r != Success {
		err := check("cuInit", r)
		if r == ErrorNoDevice {
			return fmt.Errorf("%w: the driver (%s) found no GPU: %w", ErrNoDevice, name, err)
		}
		return fmt.Errorf("%w: %w", ErrNoDriver, err)
	}
	driverPath = mappedPath(name)
	libraryLoaded(&driverLoaded)
	return nil
}

// driverEntry is one driver function to bind: fn points at the Go func
// variable; name is the base name cuGetProcAddress takes; fallback is the
// versioned symbol to dlsym where cuGetProcAddress is absent.
type driverEntry struct {
	fn       any
	name     string
	fallback string
	optional bool
}

// resolveDriver binds every entry point. cuInit, cuDriverGetVersion and
// cuGetProcAddress come from dlsym; the rest from cuGetProcAddress at
// abiVersion (or the driver's own version if older), falling back to the
// explicit versioned symbol on drivers before CUDA 11.3.
func resolveDriver(h uintptr) error {
	for _, e := range []driverEntry{{&cuInit, "cuInit", "cuInit", false}, {&cuDriverGetVersion, "cuDriverGetVersion", "cuDriverGetVersion", false}} {
		sym, err := lookup(h, e.name)
		if err != nil {
			return fmt.Errorf("missing symbol %s: %w", e.name, err)
		}
		bind(e.fn, sym)
	}
	var ver int32
	if r := cuDriverGetVersion(&ver); r != Success {
		return check("cuDriverGetVersion", r)
	}
	want := min(ver, abiVersion)
	get := procAddress(h)
	for _, e := range driverEntries() {
		sym, err := get(e, want)
		if err != nil {
			if e.optional {
				continue
			}
			return err
		}
		bind(e.fn, sym)
	}
	return nil
}

// procAddress returns the resolver to use: cuGetProcAddress_v2 (CUDA
// 12.0+), else cuGetProcAddress (11.3+), else dlsym of the versioned name.
func procAddress(h uintptr) func(e driverEntry, version int32) (uintptr, error) {
	if sym, err := lookup(h, "cuGetProcAddress_v2"); err == nil {
		var gpa func(symbol string, pfn *uintptr, version int32, flags uint64, status *int32) Result
		bind(&gpa, sym)
		return func(e driverEntry, version int32) (uintptr, error) {
			var p uintptr
			var status int32
			if r := gpa(e.name, &p, version, 0, &status); r != Success || p == 0 {
				return 0, fmt.Errorf("cuGetProcAddress(%s, %d): status %d: %w", e.name, version, status, check("cuGetProcAddress", r))
			}
			return p, nil
		}
	}
	if sym, err := lookup(h, "cuGetProcAddress"); err == nil {
		var gpa func(symbol string, pfn *uintptr, version int32, flags uint64) Result
		bind(&gpa, sym)
		return func(e driverEntry, version int32) (uintptr, error) {
			var p uintptr
			if r := gpa(e.name, &p, version, 0); r != Success || p == 0 {
				return 0, fmt.Errorf("cuGetProcAddress(%s, %d): %w", e.name, version, check("cuGetProcAddress", r))
			}
			return p, nil
		}
	}
	return func(e driverEntry, _ int32) (uintptr, error) {
		sym, err := lookup(h, e.fallback)
		if err != nil {
			return 0, fmt.Errorf("missing symbol %s: %w", e.fallback, err)
		}
		return sym, nil
	}
}

// The driver's entry points. Handles (CUcontext, CUmodule, ...) are
// uintptr; CUdevice is int32; CUdeviceptr is uint64. Every pointer points
// at memory the driver reads or writes only during the call; no struct is
// passed by value.
var (
	cuInit             func(flags uint32) Result
	cuDriverGetVersion func(v *int32) Result
	cuGetErrorName     func(r Result, s **byte) Result
	cuGetErrorString   func(r Result, s **byte) Result

	cuDeviceGetCount     func(n *int32) Result
	cuDeviceGet          func(d *int32, ordinal int32) Result
	cuDeviceGetName      func(name *byte, n int32, d int32) Result
	cuDeviceGetAttribute func(v *int32, attr int32, d int32) Result
	cuDeviceTotalMem     func(bytes *uintptr, d int32) Result

	cuDevicePrimaryCtxRetain  func(ctx *uintptr, d int32) Result
	cuDevicePrimaryCtxRelease func(d int32) Result
	cuCtxSetCurrent           func(ctx uintptr) Result
	cuCtxSynchronize          func() Result

	cuModuleLoadDataEx     func(m *uintptr, image unsafe.Pointer, n uint32, opts *int32, vals *uintptr) Result
	cuModuleUnload         func(m uintptr) Result
	cuModuleGetFunction    func(f *uintptr, m uintptr, name string) Result
	cuFuncGetAttribute     func(v *int32, attr int32, f uintptr) Result
	cuFuncSetAttribute     func(f uintptr, attr int32, v int32) Result
	cuLaunchKernel         func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params *unsafe.Pointer, extra *unsafe.Pointer) Result
	cuModuleGetLoadingMode func(mode *int32) Result

	cuMemAlloc          func(p *uint64, n uintptr) Result
	cuMemFree           func(p uint64) Result
	cuMemcpyHtoD        func(dst uint64, src unsafe.Pointer, n uintptr) Result
	cuMemcpyDtoH        func(dst unsafe.Pointer, src uint64, n uintptr) Result
	cuMemsetD8          func(dst uint64, v uint8, n uintptr) Result
	cuMemGetInfo        func(free, total *uintptr) Result
	cuStreamCreate      func(s *uintptr, flags uint32) Result
	cuStreamDestroy     func(s uintptr) Result
	cuStreamSynchronize func(s uintptr) Result

	cuEventCreate      func(e *uintptr, flags uint32) Result
	cuEventRecord      func(e, s uintptr) Result
	cuEventSynchronize func(e uintptr) Result
	cuEventElapsedTime func(ms *float32, start, end uintptr) Result
	cuEventDestroy     func(e uintptr) Result
)

func driverEntries() []driverEntry {
	return []driverEntry{
		{&cuGetErrorName, "cuGetErrorName", "cuGetErrorName", false},
		{&cuGetErrorString, "cuGetErrorString", "cuGetErrorString", false},
		{&cuDeviceGetCount, "cuDeviceGetCount", "cuDeviceGetCount", false},
		{&cuDeviceGet, "cuDeviceGet", "cuDeviceGet", false},
		{&cuDeviceGetName, "cuDeviceGetName", "cuDeviceGetName", false},
		{&cuDeviceGetAttribute, "cuDeviceGetAttribute", "cuDeviceGetAttribute", false},
		{&cuDeviceTotalMem, "cuDeviceTotalMem", "cuDeviceTotalMem_v2", false},
		{&cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", false},
		{&cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", false},
		{&cuCtxSetCurrent, "cuCtxSetCurrent", "cuCtxSetCurrent", false},
		{&cuCtxSynchronize, "cuCtxSynchronize", "cuCtxSynchronize", false},
		{&cuModuleLoadDataEx, "cuModuleLoadDataEx", "cuModuleLoadDataEx", false},
		{&cuModuleUnload, "cuModuleUnload", "cuModuleUnload", false},
		{&cuModuleGetFunction, "cuModuleGetFunction", "cuModuleGetFunction", false},
		{&cuFuncGetAttribute, "cuFuncGetAttribute", "cuFuncGetAttribute", false},
		{&cuFuncSetAttribute, "cuFuncSetAttribute", "cuFuncSetAttribute", false},
		{&cuLaunchKernel, "cuLaunchKernel", "cuLaunchKernel", false},
		{&cuModuleGetLoadingMode, "cuModuleGetLoadingMode", "cuModuleGetLoadingMode", true},
		{&cuMemAlloc, "cuMemAlloc", "cuMemAlloc_v2", false},
		{&cuMemFree, "cuMemFree", "cuMemFree_v2", false},
		{&cuMemcpyHtoD, "cuMemcpyHtoD", "cuMemcpyHtoD_v2", false},
		{&cuMemcpyDtoH, "cuMemcpyDtoH", "cuMemcpyDtoH_v2", false},
		{&cuMemsetD8, "cuMemsetD8", "cuMemsetD8_v2", false},
		{&cuMemGetInfo, "cuMemGetInfo", "cuMemGetInfo_v2", false},
		{&cuStreamCreate, "cuStreamCreate", "cuStreamCreate", false},
		{&cuStreamDestroy, "cuStreamDestroy", "cuStreamDestroy_v2", false},
		{&cuStreamSynchronize, "cuStreamSynchronize", "cuStreamSynchronize", false},
		{&cuEventCreate, "cuEventCreate", "cuEventCreate", false},
		{&cuEventRecord, "cuEventRecord", "cuEventRecord", false},
		{&cuEventSynchronize, "cuEventSynchronize", "cuEventSynchronize", false},
		{&cuEventElapsedTime, "cuEventElapsedTime", "cuEventElapsedTime", false},
		{&cuEventDestroy, "cuEventDestroy", "cuEventDestroy_v2", false},
	}
}

// DriverVersion returns the CUDA version the driver supports, as the
// driver reports it: 1000*major + 10*minor (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	if err := Init(); err != nil {
		return 0, err
	}
	var v int32
	if err := check("cuDriverGetVersion", cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DriverLibrary returns the path of the loaded driver library, as mapped
// into this process ("" before Init or where /proc is absent).
func DriverLibrary() string { return driverPath }
