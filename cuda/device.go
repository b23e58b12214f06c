package cuda

import (
	"fmt"
)

// Device is a CUDA device (CUdevice): an ordinal the driver hands out.
type Device struct{ d int32 }

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int32

// Device attributes this package and its callers use.
const (
	AttrMaxThreadsPerBlock           DeviceAttribute = 1
	AttrMaxSharedMemoryPerBlock      DeviceAttribute = 8
	AttrWarpSize                     DeviceAttribute = 10
	AttrMultiprocessorCount          DeviceAttribute = 16
	AttrL2CacheSize                  DeviceAttribute = 38
	AttrComputeCapabilityMajor       DeviceAttribute = 75
	AttrComputeCapabilityMinor       DeviceAttribute = 76
	AttrMaxSharedMemoryPerBlockOptin DeviceAttribute = 97
)

// DeviceCount returns the number of CUDA devices. It loads the driver if
// need be; a machine without one gets an error wrapping ErrNoDriver or
// ErrNoDevice.
func DeviceCount() (int, error) {
	if err := Init(); err != nil {
		return 0, err
	}
	var n int32
	if err := check("cuDeviceGetCount", cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// GetDevice returns device ordinal i.
func GetDevice(i int) (Device, error) {
	n, err := DeviceCount()
	if err != nil {
		return Device{}, err
	}
	if n == 0 {
		return Device{}, fmt.Errorf("%w: the driver reports no GPU", ErrNoDevice)
	}
	if i < 0 || i >= n {
		return Device{}, fmt.Errorf("cuda: device %d does not exist: %d device(s) found", i, n)
	}
	var d int32
	if err := check("cuDeviceGet", cuDeviceGet(&d, int32(i))); err != nil {
		return Device{}, err
	}
	return Device{d}, nil
}

// Ordinal returns the device's ordinal.
func (d Device) Ordinal() int { return int(d.d) }

// Name returns the device's name, e.g. "NVIDIA H100 80GB HBM3".
func (d Device) Name() (string, error) {
	buf := make([]byte, 256)
	if err := check("cuDeviceGetName", cuDeviceGetName(&buf[0], int32(len(buf)), d.d)); err != nil {
		return "", err
	}
	return goString(&buf[0]), nil
}

// Attribute returns one attribute of the device.
func (d Device) Attribute(a DeviceAttribute) (int, error) {
	var v int32
	if err := check("cuDeviceGetAttribute", cuDeviceGetAttribute(&v, int32(a), d.d)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// ComputeCapability returns the device's compute capability, e.g. 9, 0.
func (d Device) ComputeCapability() (major, minor int, err error) {
	if major, err = d.Attribute(AttrComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	minor, err = d.Attribute(AttrComputeCapabilityMinor)
	return major, minor, err
}

// Arch returns the device's architecture name as NVRTC takes it, e.g.
// "sm_90".
func (d Device) Arch() (string, error) {
	major, minor, err := d.ComputeCapability()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("sm_%d%d", major, minor), nil
}

// TotalMemory returns the device's memory in bytes.
func (d Device) TotalMemory() (int64, error) {
	var n uintptr
	if err := check("cuDeviceTotalMem", cuDeviceTotalMem(&n, d.d)); err != nil {
		return 0, err
	}
	return int64(n), nil
}
