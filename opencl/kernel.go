package opencl

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

const kernelWorkGroupSize = 0x11B0 // CL_KERNEL_WORK_GROUP_SIZE

// Kernel is one kernel function of a built program, with its own argument
// values. OpenCL forbids setting arguments of one cl_kernel from two threads
// at once, so every SetArg* and Queue.Run holds mu; that makes a shared
// Kernel memory-safe, but arguments set by one goroutine can still be
// replaced by another before it runs. Give each goroutine its own Kernel
// (NewKernel is cheap once the program is built).
type Kernel struct {
	ref
	name string
	mu   sync.Mutex // serialises clSetKernelArg and clEnqueueNDRangeKernel on this kernel
}

// Local is a kernel argument type for SetArg: a __local buffer of that
// many bytes, allocated per work-group by the device.
type Local int

// NewKernel creates a kernel object for the named __kernel function of the
// built program. The caller owns it and must Release it; OpenCL keeps the
// program alive while the kernel exists.
func (p *Program) NewKernel(name string) (*Kernel, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	var errc int32
	h := clCreateKernel(p.handle(), name, &errc)
	if err := check(errc, "clCreateKernel"); err != nil {
		return nil, fmt.Errorf("opencl: kernel %q: %w", name, err)
	}
	k := &Kernel{name: name}
	k.h.Store(h)
	return k, nil
}

// Release drops the kernel's reference. It is idempotent.
func (k *Kernel) Release() {
	if k != nil {
		k.release(clReleaseKernel)
	}
}

// Name returns the kernel function's name.
func (k *Kernel) Name() string { return k.name }

// Handle returns the raw cl_kernel (0 after Release).
func (k *Kernel) Handle() uintptr { return k.handle() }

// setArg is the one place clSetKernelArg is called. val must point at
// size bytes that hold no Go pointers; the driver copies them.
func (k *Kernel) setArg(i int, size uintptr, val unsafe.Pointer) error {
	if err := Load(); err != nil {
		return err
	}
	if i < 0 {
		return fmt.Errorf("opencl: kernel %s arg %d: %w", k.name, i, newError(CodeInvalidArgIndex, "clSetKernelArg"))
	}
	k.mu.Lock()
	code := clSetKernelArg(k.handle(), uint32(i), size, val)
	k.mu.Unlock()
	if err := check(code, "clSetKernelArg"); err != nil {
		return fmt.Errorf("opencl: kernel %s arg %d: %w", k.name, i, err)
	}
	return nil
}

// SetArgBuffer sets argument i to a buffer (a __global or __constant
// pointer). A nil b sets a NULL pointer, which OpenCL allows.
func (k *Kernel) SetArgBuffer(i int, b *Buffer) error {
	var h uintptr
	if b != nil {
		h = b.handle()
	}
	if h == 0 {
		return k.setArg(i, unsafe.Sizeof(h), nil)
	}
	return k.setArg(i, unsafe.Sizeof(h), unsafe.Pointer(&h))
}

// SetArgBytes sets argument i to a by-value scalar, vector or struct given
// as its bytes in host byte order (little-endian on every platform Go and
// OpenCL share). len(v) must equal the argument's size in the kernel.
func (k *Kernel) SetArgBytes(i int, v []byte) error {
	if len(v) == 0 {
		return fmt.Errorf("opencl: kernel %s arg %d: empty value: %w", k.name, i, newError(CodeInvalidArgSize, "clSetKernelArg"))
	}
	err := k.setArg(i, uintptr(len(v)), unsafe.Pointer(&v[0]))
	runtime.KeepAlive(v)
	return err
}

// SetArgLocal sets argument i, a __local pointer, to size bytes of local
// memory per work-group.
func (k *Kernel) SetArgLocal(i int, size int) error {
	if size <= 0 {
		return fmt.Errorf("opencl: kernel %s arg %d: local size %d: %w", k.name, i, size, newError(CodeInvalidArgSize, "clSetKernelArg"))
	}
	return k.setArg(i, uintptr(size), nil)
}

// SetArg sets argument i from a Go value: int8 to int64, uint8 to uint64,
// float32, float64, *Buffer, or Local. Plain int and uint are refused
// because their size would silently differ from the kernel's int (32 bits).
func (k *Kernel) SetArg(i int, v any) error {
	switch v := v.(type) {
	case *Buffer:
		return k.SetArgBuffer(i, v)
	case Local:
		return k.SetArgLocal(i, int(v))
	}
	b, ok := scalarBytes(v)
	if !ok {
		return fmt.Errorf("opencl: kernel %s arg %d: unsupported type %T (use a sized integer, float, *Buffer or Local)", k.name, i, v)
	}
	return k.SetArgBytes(i, b)
}

// scalarBytes encodes a sized scalar in host byte order.
func scalarBytes(v any) ([]byte, bool) {
	e := binary.NativeEndian
	switch v := v.(type) {
	case int8:
		return []byte{byte(v)}, true
	case uint8:
		return []byte{v}, true
	case int16:
		return e.AppendUint16(nil, uint16(v)), true
	case uint16:
		return e.AppendUint16(nil, v), true
	case int32:
		return e.AppendUint32(nil, uint32(v)), true
	case uint32:
		return e.AppendUint32(nil, v), true
	case float32:
		return e.AppendUint32(nil, math.Float32bits(v)), true
	case int64:
		return e.AppendUint64(nil, uint64(v)), true
	case uint64:
		return e.AppendUint64(nil, v), true
	case float64:
		return e.AppendUint64(nil, math.Float64bits(v)), true
	}
	return nil, false
}

// WorkGroupSize returns the largest work-group size this kernel can run
// with on d (CL_KERNEL_WORK_GROUP_SIZE), which may be below the device's.
func (k *Kernel) WorkGroupSize(d Device) (int, error) {
	h := k.handle()
	f := func(param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32 {
		return clGetKernelWorkGroupInfo(h, d.id, param, size, val, sizeRet)
	}
	n, err := infoValue[uintptr]("clGetKernelWorkGroupInfo", f, kernelWorkGroupSize)
	return int(n), err
}
