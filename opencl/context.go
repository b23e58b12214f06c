package opencl

import (
	"errors"
	"slices"
)

// contextPlatform is CL_CONTEXT_PLATFORM, the context property key.
const contextPlatform = 0x1084

// Context is an OpenCL context over one or more devices of one platform.
// Its methods are safe for concurrent use; OpenCL contexts are thread-safe.
type Context struct {
	ref
	devices  []Device // immutable after NewContext
	platform Platform
	apiMajor int // platform API version, read once: it gates 2.x entry points
	apiMinor int
}

// NewContext creates a context over devices, which must share a platform.
// The caller owns the context and must Release it after every program,
// queue and buffer made from it.
func NewContext(devices ...Device) (*Context, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if len(devices) == 0 {
		return nil, errors.New("opencl: NewContext needs at least one device")
	}
	plat := devices[0].Platform()
	props := []uintptr{contextPlatform, plat.id, 0}
	ids := deviceIDs(devices)
	var errc int32
	h := clCreateContext(&props[0], uint32(len(ids)), &ids[0], 0, 0, &errc)
	if err := check(errc, "clCreateContext"); err != nil {
		return nil, err
	}
	c := &Context{devices: slices.Clone(devices), platform: plat}
	c.apiMajor, c.apiMinor = plat.APIVersion()
	c.h.Store(h)
	return c, nil
}

// Release drops the context's reference. It is idempotent.
func (c *Context) Release() {
	if c != nil {
		c.release(clReleaseContext)
	}
}

// Handle returns the raw cl_context (0 after Release).
func (c *Context) Handle() uintptr { return c.handle() }

// Devices returns a copy of the devices the context was created with.
func (c *Context) Devices() []Device { return slices.Clone(c.devices) }

// Platform returns the platform of the context's devices.
func (c *Context) Platform() Platform { return c.platform }

// supports reports whether the context's platform implements OpenCL
// major.minor, the gate for calling entry points added in that version.
func (c *Context) supports(major, minor int) bool {
	return atLeast(c.apiMajor, c.apiMinor, major, minor)
}
