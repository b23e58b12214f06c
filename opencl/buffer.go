package opencl

import (
	"errors"
	"runtime"
	"unsafe"
)

// MemFlags are cl_mem_flags for NewBuffer.
type MemFlags uint64

// Buffer flags. MemUseHostPtr is deliberately absent: it lets the driver
// keep a pointer into host memory after the call, which Go memory cannot
// allow (the collector may free it). Use NewBufferFrom, which copies.
const (
	MemReadWrite     MemFlags = 1 << 0
	MemWriteOnly     MemFlags = 1 << 1
	MemReadOnly      MemFlags = 1 << 2
	MemAllocHostPtr  MemFlags = 1 << 4
	MemCopyHostPtr   MemFlags = 1 << 5
	MemHostWriteOnly MemFlags = 1 << 7
	MemHostReadOnly  MemFlags = 1 << 8
	MemHostNoAccess  MemFlags = 1 << 9

	memUseHostPtr MemFlags = 1 << 3
)

// Buffer is a device memory object (cl_mem). Its methods are safe for
// concurrent use.
type Buffer struct {
	ref
	size int
}

// NewBuffer allocates size bytes of device memory. Flags that take host
// memory (MemCopyHostPtr) belong to NewBufferFrom; device exhaustion shows
// as an error for which IsOutOfMemory is true.
func (c *Context) NewBuffer(flags MemFlags, size int) (*Buffer, error) {
	if flags&(MemCopyHostPtr|memUseHostPtr) != 0 {
		return nil, errors.New("opencl: NewBuffer: host-pointer flags need NewBufferFrom")
	}
	return c.newBuffer(flags, size, nil)
}

// NewBufferFrom allocates a buffer of len(data) bytes initialised with a
// copy of data (MemCopyHostPtr is added). The driver copies during the
// call, so data may be reused as soon as it returns.
func (c *Context) NewBufferFrom(flags MemFlags, data []byte) (*Buffer, error) {
	if flags&memUseHostPtr != 0 {
		return nil, errors.New("opencl: NewBufferFrom: CL_MEM_USE_HOST_PTR cannot point at Go memory")
	}
	if len(data) == 0 {
		return nil, newError(-61, "clCreateBuffer") // CL_INVALID_BUFFER_SIZE, as the driver would say
	}
	b, err := c.newBuffer(flags|MemCopyHostPtr, len(data), unsafe.Pointer(&data[0]))
	runtime.KeepAlive(data)
	return b, err
}

func (c *Context) newBuffer(flags MemFlags, size int, host unsafe.Pointer) (*Buffer, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, newError(-61, "clCreateBuffer") // CL_INVALID_BUFFER_SIZE; a negative size must not wrap
	}
	var errc int32
	h := clCreateBuffer(c.handle(), uint64(flags), uintptr(size), host, &errc)
	if err := check(errc, "clCreateBuffer"); err != nil {
		return nil, err
	}
	b := &Buffer{size: size}
	b.h.Store(h)
	return b, nil
}

// Release drops the buffer's reference. It is idempotent.
func (b *Buffer) Release() {
	if b != nil {
		b.release(clReleaseMemObject)
	}
}

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() int { return b.size }

// Handle returns the raw cl_mem (0 after Release).
func (b *Buffer) Handle() uintptr { return b.handle() }
