package opencl

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// QueueFlags are cl_command_queue_properties for NewQueueFlags.
type QueueFlags uint64

// Queue flags.
const (
	QueueOutOfOrder QueueFlags = 1 << 0 // CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE
	QueueProfiling  QueueFlags = 1 << 1 // CL_QUEUE_PROFILING_ENABLE: Event.Duration works
)

// queueProperties is CL_QUEUE_PROPERTIES, the key in a 2.0 property list.
const queueProperties = 0x1093

// Queue is a command queue on one device. Its methods are safe for
// concurrent use (OpenCL queues are thread-safe), though commands from
// different goroutines interleave in no particular order.
type Queue struct {
	ref
	device Device
}

// NewQueue creates an in-order queue on d, which must be one of the
// context's devices.
func (c *Context) NewQueue(d Device) (*Queue, error) { return c.NewQueueFlags(d, 0) }

// NewQueueFlags creates a queue with flags (QueueProfiling, QueueOutOfOrder).
// It uses clCreateCommandQueueWithProperties where the platform implements
// OpenCL 2.0, and the 1.x clCreateCommandQueue otherwise, so that neither a
// deprecation nor a missing entry point matters.
func (c *Context) NewQueueFlags(d Device, flags QueueFlags) (*Queue, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	var h uintptr
	var errc int32
	fn := "clCreateCommandQueue"
	if clCreateCommandQueueWithProperties != nil && c.supports(2, 0) {
		fn = "clCreateCommandQueueWithProperties"
		var props *uint64
		if flags != 0 {
			list := []uint64{queueProperties, uint64(flags), 0}
			props = &list[0]
		}
		h = clCreateCommandQueueWithProperties(c.handle(), d.id, props, &errc)
	} else {
		h = clCreateCommandQueue(c.handle(), d.id, uint64(flags), &errc)
	}
	if err := check(errc, fn); err != nil {
		return nil, err
	}
	q := &Queue{device: d}
	q.h.Store(h)
	return q, nil
}

// Release drops the queue's reference. It is idempotent. OpenCL flushes
// the queue first; it does not wait for the commands to finish.
func (q *Queue) Release() {
	if q != nil {
		q.release(clReleaseCommandQueue)
	}
}

// Handle returns the raw cl_command_queue (0 after Release).
func (q *Queue) Handle() uintptr { return q.handle() }

// Device returns the queue's device.
func (q *Queue) Device() Device { return q.device }

// Finish blocks until every command enqueued so far has completed. The
// calling goroutine's OS thread blocks in C; other goroutines keep running.
func (q *Queue) Finish() error {
	if err := Load(); err != nil {
		return err
	}
	return check(clFinish(q.handle()), "clFinish")
}

// Flush submits enqueued commands to the device without waiting.
func (q *Queue) Flush() error {
	if err := Load(); err != nil {
		return err
	}
	return check(clFlush(q.handle()), "clFlush")
}

// Write copies data into b at offset and returns when the copy is done.
// Blocking is what makes passing a Go slice safe: the driver may not keep
// the pointer once the call returns.
func (q *Queue) Write(b *Buffer, offset int, data []byte) error {
	if err := checkRange(b, offset, len(data), "clEnqueueWriteBuffer"); err != nil || len(data) == 0 {
		return err
	}
	code := clEnqueueWriteBuffer(q.handle(), b.handle(), clTrue, uintptr(offset), uintptr(len(data)),
		unsafe.Pointer(&data[0]), 0, nil, nil)
	runtime.KeepAlive(data)
	return check(code, "clEnqueueWriteBuffer")
}

// Read copies len(data) bytes of b from offset into data and returns when
// the copy is done (blocking, for the same reason as Write).
func (q *Queue) Read(b *Buffer, offset int, data []byte) error {
	if err := checkRange(b, offset, len(data), "clEnqueueReadBuffer"); err != nil || len(data) == 0 {
		return err
	}
	code := clEnqueueReadBuffer(q.handle(), b.handle(), clTrue, uintptr(offset), uintptr(len(data)),
		unsafe.Pointer(&data[0]), 0, nil, nil)
	runtime.KeepAlive(data)
	return check(code, "clEnqueueReadBuffer")
}

// clTrue is CL_TRUE as a cl_bool.
const clTrue uint32 = 1

// checkRange rejects what would otherwise wrap when converted to size_t.
func checkRange(b *Buffer, offset, n int, fn string) error {
	if err := Load(); err != nil {
		return err
	}
	if b == nil || offset < 0 || offset > b.size || n > b.size-offset {
		return fmt.Errorf("opencl: range [%d, +%d) outside buffer: %w", offset, n, newError(CodeInvalidValue, fn))
	}
	return nil
}

// Run enqueues k over a 1-, 2- or 3-dimensional global range. local gives
// the work-group size per dimension, or nil to let the runtime choose. The
// returned Event completes when the kernel has run; the caller must Release
// it. Run holds k's lock while enqueueing, because OpenCL captures kernel
// arguments at enqueue time and forbids concurrent clSetKernelArg.
func (q *Queue) Run(k *Kernel, global, local []int) (*Event, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if k == nil {
		return nil, errors.New("opencl: Run with a nil kernel")
	}
	g, l, err := workSizes(global, local)
	if err != nil {
		return nil, err
	}
	var ev uintptr
	k.mu.Lock()
	code := clEnqueueNDRangeKernel(q.handle(), k.handle(), uint32(len(g)), nil, &g[0], firstOrNil(l), 0, nil, &ev)
	k.mu.Unlock()
	if err := check(code, "clEnqueueNDRangeKernel"); err != nil {
		return nil, fmt.Errorf("opencl: run %s: %w", k.name, err)
	}
	return newEvent(ev), nil
}

// workSizes converts and validates NDRange sizes before they reach C.
func workSizes(global, local []int) (g, l []uintptr, err error) {
	if len(global) < 1 || len(global) > 3 {
		return nil, nil, fmt.Errorf("opencl: %d work dimensions, want 1 to 3: %w", len(global),
			newError(CodeInvalidWorkDimension, "clEnqueueNDRangeKernel"))
	}
	if local != nil && len(local) != len(global) {
		return nil, nil, errors.New("opencl: local work size must have as many dimensions as global")
	}
	toSize := func(s []int) ([]uintptr, bool) {
		out := make([]uintptr, len(s))
		for i, v := range s {
			if v <= 0 {
				return nil, false
			}
			out[i] = uintptr(v)
		}
		return out, true
	}
	g, okG := toSize(global)
	l, okL := toSize(local)
	if !okG || !okL {
		return nil, nil, fmt.Errorf("opencl: work sizes must be positive (global %v, local %v): %w",
			global, local, newError(CodeInvalidValue, "clEnqueueNDRangeKernel"))
	}
	if local == nil {
		l = nil
	}
	return g, l, nil
}
