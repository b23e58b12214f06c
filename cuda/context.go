package cuda

import (
	"fmt"
	"runtime"
	"sync"
)

// Context is a device's primary context: the one context per device that
// the runtime API, CuPy and PyTorch share, so modules loaded here live
// beside theirs. Its methods are safe from any goroutine: each makes the
// context current on its locked OS thread for the duration of the call.
type Context struct {
	h   uintptr // CUcontext
	dev Device

	mu       sync.Mutex // guards released
	released bool
}

// PrimaryContext retains dev's primary context. Release it when done; the
// driver destroys it when its last holder in the process lets go.
func PrimaryContext(dev Device) (*Context, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	var h uintptr
	if err := check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&h, dev.d)); err != nil {
		return nil, err
	}
	return &Context{h: h, dev: dev}, nil
}

// Device returns the context's device.
func (c *Context) Device() Device { return c.dev }

// Handle returns the CUcontext, for calls this package does not wrap.
func (c *Context) Handle() uintptr { return c.h }

// Release lets go of the primary context. Modules, memory and streams
// made in it must be freed first. Release is idempotent.
func (c *Context) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return nil
	}
	c.released = true
	return check("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(c.dev.d))
}

// Do runs f with the context current on the calling goroutine's OS thread,
// which stays locked to it until f returns: for driver calls this package
// does not wrap.
func (c *Context) Do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check("cuCtxSetCurrent", cuCtxSetCurrent(c.h)); err != nil {
		return err
	}
	return f()
}

// call runs one driver call with the context current. Setting the current
// context costs a thread-local store in the driver, far less than a call
// that needs it; doing it every time spares tracking which thread holds
// which context across goroutine migrations.
func (c *Context) call(op string, f func() Result) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := cuCtxSetCurrent(c.h); r != Success {
		return check("cuCtxSetCurrent", r)
	}
	return check(op, f())
}

// Synchronize waits for all work in the context to finish.
func (c *Context) Synchronize() error {
	return c.call("cuCtxSynchronize", cuCtxSynchronize)
}

// MemoryInfo returns the device memory free and in total.
func (c *Context) MemoryInfo() (free, total int64, err error) {
	var f, t uintptr
	err = c.call("cuMemGetInfo", func() Result { return cuMemGetInfo(&f, &t) })
	return int64(f), int64(t), err
}

// LazyLoading reports whether the driver loads modules lazily (the default
// since CUDA 12.2; CUDA_MODULE_LOADING=EAGER turns it off): functions are
// then loaded onto the device at their first launch, not by LoadModule.
func LazyLoading() (bool, error) {
	if err := Init(); err != nil {
		return false, err
	}
	if cuModuleGetLoadingMode == nil {
		return false, nil
	}
	var mode int32
	if err := check("cuModuleGetLoadingMode", cuModuleGetLoadingMode(&mode)); err != nil {
		return false, err
	}
	return mode == 2, nil // CU_MODULE_LAZY_LOADING
}

func (c *Context) String() string { return fmt.Sprintf("cuda.Context(device %d)", c.dev.d) }
