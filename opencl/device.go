package opencl

import "unsafe"

// Device types (cl_device_type), as Device.Type returns them: a bit set.
const (
	DeviceTypeDefault     uint64 = 1 << 0
	DeviceTypeCPU         uint64 = 1 << 1
	DeviceTypeGPU         uint64 = 1 << 2
	DeviceTypeAccelerator uint64 = 1 << 3
	DeviceTypeCustom      uint64 = 1 << 4
	DeviceTypeAll         uint64 = 0xFFFFFFFF
)

// Device parameters for Device.Info (cl_device_info).
const (
	DeviceType             uint32 = 0x1000
	DeviceMaxComputeUnits  uint32 = 0x1002
	DeviceMaxWorkGroupSize uint32 = 0x1004
	DeviceMaxMemAllocSize  uint32 = 0x1010
	DeviceGlobalMemSize    uint32 = 0x101F
	DeviceLocalMemSize     uint32 = 0x1023
	DeviceName             uint32 = 0x102B
	DeviceVendor           uint32 = 0x102C
	DriverVersion          uint32 = 0x102D
	DeviceVersion          uint32 = 0x102F
	DeviceExtensions       uint32 = 0x1030
	DevicePlatform         uint32 = 0x1031
	DeviceOpenCLCVersion   uint32 = 0x103D
	DeviceILVersion        uint32 = 0x105B
)

// Device is an OpenCL root device. It is a plain handle: root devices are
// owned by their platform and never released, so Device values may be
// copied, compared, and used as map keys (or use Handle).
type Device struct {
	id uintptr // cl_device_id
}

// Handle returns the raw cl_device_id, stable for the life of the process.
func (d Device) Handle() uintptr { return d.id }

func (d Device) infoFunc() infoFunc {
	return func(param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32 {
		return clGetDeviceInfo(d.id, param, size, val, sizeRet)
	}
}

// Info returns the raw bytes of any cl_device_info parameter.
func (d Device) Info(param uint32) ([]byte, error) {
	return infoSlice[byte]("clGetDeviceInfo", d.infoFunc(), param)
}

func (d Device) infoString(param uint32) string {
	s, _ := infoString("clGetDeviceInfo", d.infoFunc(), param) // "" on error, as documented
	return s
}

// infoUint returns an unsigned scalar parameter of type T, 0 on error.
func infoUint[T uint32 | uint64 | uintptr](d Device, param uint32) T {
	v, _ := infoValue[T]("clGetDeviceInfo", d.infoFunc(), param) // 0 on error, as documented
	return v
}

// Name returns CL_DEVICE_NAME, or "" if the query fails.
func (d Device) Name() string { return d.infoString(DeviceName) }

// String returns the device name, so a Device prints readably.
func (d Device) String() string { return d.Name() }

// Version returns CL_DEVICE_VERSION ("OpenCL 3.0 <vendor text>"), or "".
func (d Device) Version() string { return d.infoString(DeviceVersion) }

// DriverVersion returns CL_DRIVER_VERSION, or "".
func (d Device) DriverVersion() string { return d.infoString(DriverVersion) }

// Vendor returns CL_DEVICE_VENDOR, or "".
func (d Device) Vendor() string { return d.infoString(DeviceVendor) }

// Extensions returns CL_DEVICE_EXTENSIONS (space-separated), or "".
func (d Device) Extensions() string { return d.infoString(DeviceExtensions) }

// OpenCLCVersion returns CL_DEVICE_OPENCL_C_VERSION, or "".
func (d Device) OpenCLCVersion() string { return d.infoString(DeviceOpenCLCVersion) }

// ILVersion returns CL_DEVICE_IL_VERSION (e.g. "SPIR-V_1.2"), or "" where
// the device takes no intermediate language or predates OpenCL 2.1.
func (d Device) ILVersion() string { return d.infoString(DeviceILVersion) }

// Platform returns the device's platform, or the zero Platform on error.
func (d Device) Platform() Platform {
	return Platform{id: infoUint[uintptr](d, DevicePlatform)}
}

// MaxWorkGroupSize returns CL_DEVICE_MAX_WORK_GROUP_SIZE, or 0.
func (d Device) MaxWorkGroupSize() int { return int(infoUint[uintptr](d, DeviceMaxWorkGroupSize)) }

// MaxComputeUnits returns CL_DEVICE_MAX_COMPUTE_UNITS, or 0.
func (d Device) MaxComputeUnits() int { return int(infoUint[uint32](d, DeviceMaxComputeUnits)) }

// Type returns CL_DEVICE_TYPE, a set of DeviceType* bits, or 0.
func (d Device) Type() uint64 { return infoUint[uint64](d, DeviceType) }

// GlobalMemSize returns CL_DEVICE_GLOBAL_MEM_SIZE in bytes, or 0.
func (d Device) GlobalMemSize() uint64 { return infoUint[uint64](d, DeviceGlobalMemSize) }

// LocalMemSize returns CL_DEVICE_LOCAL_MEM_SIZE in bytes, or 0.
func (d Device) LocalMemSize() uint64 { return infoUint[uint64](d, DeviceLocalMemSize) }

// MaxMemAllocSize returns CL_DEVICE_MAX_MEM_ALLOC_SIZE in bytes, or 0.
func (d Device) MaxMemAllocSize() uint64 { return infoUint[uint64](d, DeviceMaxMemAllocSize) }

// deviceIDs flattens devices into the cl_device_id array the C API takes.
func deviceIDs(devs []Device) []uintptr {
	ids := make([]uintptr, len(devs))
	for i, d := range devs {
		ids[i] = d.id
	}
	return ids
}

// firstOrNil returns &s[0], or nil for an empty slice, the C convention for
// an absent array.
func firstOrNil[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}
