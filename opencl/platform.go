package opencl

import (
	"fmt"
	"unsafe"
)

// Platform parameters for Platform.Info (cl_platform_info).
const (
	PlatformProfile    uint32 = 0x0900
	PlatformVersion    uint32 = 0x0901
	PlatformName       uint32 = 0x0902
	PlatformVendor     uint32 = 0x0903
	PlatformExtensions uint32 = 0x0904
)

// Platform is an OpenCL platform: one driver (ICD) registered with the
// loader. It is a plain handle: platforms are never released, so Platform
// values may be copied and compared freely.
type Platform struct {
	id uintptr // cl_platform_id
}

// Platforms returns every platform the ICD loader knows, in loader order.
func Platforms() ([]Platform, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	var n uint32
	if err := check(clGetPlatformIDs(0, nil, &n), "clGetPlatformIDs"); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	ids := make([]uintptr, n)
	if err := check(clGetPlatformIDs(n, &ids[0], &n), "clGetPlatformIDs"); err != nil {
		return nil, err
	}
	ps := make([]Platform, 0, n)
	for _, id := range ids[:n] {
		ps = append(ps, Platform{id: id})
	}
	return ps, nil
}

// Handle returns the raw cl_platform_id.
func (p Platform) Handle() uintptr { return p.id }

func (p Platform) infoFunc() infoFunc {
	return func(param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32 {
		return clGetPlatformInfo(p.id, param, size, val, sizeRet)
	}
}

// Info returns the raw bytes of any cl_platform_info parameter, for queries
// this package has no method for.
func (p Platform) Info(param uint32) ([]byte, error) {
	return infoSlice[byte]("clGetPlatformInfo", p.infoFunc(), param)
}

func (p Platform) infoString(param uint32) string {
	s, _ := infoString("clGetPlatformInfo", p.infoFunc(), param) // "" on error, as documented
	return s
}

// Name returns CL_PLATFORM_NAME, or "" if the query fails.
func (p Platform) Name() string { return p.infoString(PlatformName) }

// Version returns CL_PLATFORM_VERSION ("OpenCL 3.0 <vendor text>"), or "".
func (p Platform) Version() string { return p.infoString(PlatformVersion) }

// Vendor returns CL_PLATFORM_VENDOR, or "".
func (p Platform) Vendor() string { return p.infoString(PlatformVendor) }

// Extensions returns CL_PLATFORM_EXTENSIONS (space-separated), or "".
func (p Platform) Extensions() string { return p.infoString(PlatformExtensions) }

// APIVersion returns the OpenCL version the platform implements, parsed
// from Version; 0, 0 if it cannot be parsed. Entry points newer than 1.2
// (queues with properties, IL programs) are used only where this allows.
func (p Platform) APIVersion() (major, minor int) {
	return parseCLVersion(p.Version())
}

// parseCLVersion reads "OpenCL <major>.<minor> ..." as every platform and
// device version string must begin.
func parseCLVersion(s string) (major, minor int) {
	if _, err := fmt.Sscanf(s, "OpenCL %d.%d", &major, &minor); err != nil {
		return 0, 0
	}
	return major, minor
}

// atLeast reports whether version major.minor is at least want.
func atLeast(major, minor, wantMajor, wantMinor int) bool {
	return major > wantMajor || (major == wantMajor && minor >= wantMinor)
}

// Devices returns every device of the platform (CL_DEVICE_TYPE_ALL). A
// platform with no devices gives an empty slice, not an error.
func (p Platform) Devices() ([]Device, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	noteDeviceInit()
	var n uint32
	code := clGetDeviceIDs(p.id, DeviceTypeAll, 0, nil, &n)
	if code == CodeDeviceNotFound || (code == 0 && n == 0) {
		return nil, nil
	}
	if err := check(code, "clGetDeviceIDs"); err != nil {
		return nil, err
	}
	ids := make([]uintptr, n)
	if err := check(clGetDeviceIDs(p.id, DeviceTypeAll, n, &ids[0], &n), "clGetDeviceIDs"); err != nil {
		return nil, err
	}
	ds := make([]Device, 0, n)
	for _, id := range ids[:n] {
		ds = append(ds, Device{id: id})
	}
	return ds, nil
}

// AllDevices returns every device of every platform: platforms in loader
// order, each platform's devices in the driver's order. The loader reads
// its vendor list in a fixed order, so the result is stable from run to run
// on one machine; a platform whose device query fails is skipped, since one
// broken driver should not hide the others.
func AllDevices() ([]Device, error) {
	ps, err := Platforms()
	if err != nil {
		return nil, err
	}
	var all []Device
	var firstErr error
	for _, p := range ps {
		ds, err := p.Devices()
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("opencl: devices of platform %q: %w", p.Name(), err)
			}
			continue
		}
		all = append(all, ds...)
	}
	if len(all) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return all, nil
}
