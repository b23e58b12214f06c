package cuda

import (
	"fmt"
	"unsafe"
)

// DevicePtr is an address in device memory (CUdeviceptr).
type DevicePtr uint64

// Alloc allocates n bytes of device memory in c.
func (c *Context) Alloc(n int) (DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cuda: Alloc(%d): size must be positive", n)
	}
	var p uint64
	err := c.call("cuMemAlloc", func() Result { return cuMemAlloc(&p, uintptr(n)) })
	return DevicePtr(p), err
}

// Free frees memory from Alloc.
func (c *Context) Free(p DevicePtr) error {
	return c.call("cuMemFree", func() Result { return cuMemFree(uint64(p)) })
}

// CopyToDevice copies src to device memory at dst, synchronously.
func (c *Context) CopyToDevice(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return c.call("cuMemcpyHtoD", func() Result { return cuMemcpyHtoD(uint64(dst), unsafe.Pointer(&src[0]), uintptr(len(src))) })
}

// CopyFromDevice copies len(dst) bytes of device memory at src into dst,
// synchronously.
func (c *Context) CopyFromDevice(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return c.call("cuMemcpyDtoH", func() Result { return cuMemcpyDtoH(unsafe.Pointer(&dst[0]), uint64(src), uintptr(len(dst))) })
}

// Memset sets n bytes of device memory at p to v.
func (c *Context) Memset(p DevicePtr, v byte, n int) error {
	return c.call("cuMemsetD8", func() Result { return cuMemsetD8(uint64(p), v, uintptr(n)) })
}
