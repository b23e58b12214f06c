package opencl

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// Program parameters for clGetProgramInfo and clGetProgramBuildInfo.
const (
	programNumDevices  = 0x1162
	programDevices     = 0x1163
	programBinarySizes = 0x1165
	programBinaries    = 0x1166
	programKernelNames = 0x1168
	programBuildStatus = 0x1181
	programBuildLog    = 0x1183
)

// Program is an OpenCL program object. Its methods are safe for concurrent
// use, except that OpenCL forbids building a program while kernels made
// from it exist or while another build of it runs.
type Program struct {
	ref
}

func newProgram(h uintptr) *Program {
	p := &Program{}
	p.h.Store(h)
	return p
}

// ProgramWithSource creates a program from OpenCL C source. The strings are
// concatenated, exactly as OpenCL itself treats several source strings.
func (c *Context) ProgramWithSource(src ...string) (*Program, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	text := []byte(strings.Join(src, ""))
	if len(text) == 0 {
		return nil, fmt.Errorf("opencl: empty program source: %w", newError(CodeInvalidValue, "clCreateProgramWithSource"))
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	strs := pinnedPointers(&pin, [][]byte{text})
	lens := []uintptr{uintptr(len(text))}
	var errc int32
	h := clCreateProgramWithSource(c.handle(), 1, unsafe.Pointer(&strs[0]), &lens[0], &errc)
	if err := check(errc, "clCreateProgramWithSource"); err != nil {
		return nil, err
	}
	return newProgram(h), nil
}

// pinnedPointers returns a C array of pointers to the first byte of each
// slice. The array lives in Go memory and holds Go pointers, which the cgo
// rules purego follows allow only if the pointees are pinned: pinning stops
// the collector from freeing or (in a future moving collector) relocating
// them while C reads through the array. Every slice must be non-empty; the
// caller unpins after the C call returns.
func pinnedPointers(pin *runtime.Pinner, bufs [][]byte) []*byte {
	ptrs := make([]*byte, len(bufs))
	for i, b := range bufs {
		if len(b) == 0 {
			continue // C treats NULL as "no binary for this slot"
		}
		ptrs[i] = &b[0]
		pin.Pin(ptrs[i])
	}
	return ptrs
}

// ProgramWithBinary creates a program from device binaries, one per device,
// as Binaries returned them. A binary the driver does not accept (foreign,
// truncated, from another driver version) gives an error that wraps
// CL_INVALID_BINARY and names each rejected device's status; the program
// must still be built before kernels can be made from it.
func (c *Context) ProgramWithBinary(devs []Device, bins [][]byte) (*Program, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if len(devs) == 0 || len(devs) != len(bins) {
		return nil, fmt.Errorf("opencl: %d devices, %d binaries: %w", len(devs), len(bins),
			newError(CodeInvalidValue, "clCreateProgramWithBinary"))
	}
	lens := make([]uintptr, len(bins))
	for i, b := range bins {
		if len(b) == 0 {
			return nil, fmt.Errorf("opencl: empty binary for device %q: %w", devs[i].Name(),
				newError(CodeInvalidValue, "clCreateProgramWithBinary"))
		}
		lens[i] = uintptr(len(b))
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := pinnedPointers(&pin, bins)
	ids := deviceIDs(devs)
	status := make([]int32, len(devs))
	var errc int32
	h := clCreateProgramWithBinary(c.handle(), uint32(len(ids)), &ids[0], &lens[0], unsafe.Pointer(&ptrs[0]), &status[0], &errc)
	if errc != CodeSuccess {
		if h != 0 {
			clReleaseProgram(h) // not expected on failure, but never leak
		}
		return nil, binaryError(devs, status, errc)
	}
	return newProgram(h), nil
}

// binaryError names each device whose binary the driver refused.
func binaryError(devs []Device, status []int32, errc int32) error {
	var bad []string
	for i, s := range status {
		if s != CodeSuccess {
			bad = append(bad, fmt.Sprintf("%s: %s", devs[i].Name(), CodeName(s)))
		}
	}
	if len(bad) == 0 {
		return newError(errc, "clCreateProgramWithBinary")
	}
	return fmt.Errorf("opencl: program binary rejected (%s): %w", strings.Join(bad, "; "),
		newError(errc, "clCreateProgramWithBinary"))
}

// ProgramWithIL creates a program from an intermediate language such as
// SPIR-V. It needs an OpenCL 2.1 platform and a device that lists an IL
// (Device.ILVersion); otherwise the error wraps errors.ErrUnsupported.
func (c *Context) ProgramWithIL(il []byte) (*Program, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if err := c.checkIL(); err != nil {
		return nil, err
	}
	if len(il) == 0 {
		return nil, fmt.Errorf("opencl: empty IL: %w", newError(CodeInvalidValue, "clCreateProgramWithIL"))
	}
	var errc int32
	h := clCreateProgramWithIL(c.handle(), unsafe.Pointer(&il[0]), uintptr(len(il)), &errc)
	runtime.KeepAlive(il)
	if err := check(errc, "clCreateProgramWithIL"); err != nil {
		return nil, err
	}
	return newProgram(h), nil
}

func (c *Context) checkIL() error {
	if clCreateProgramWithIL == nil || !c.supports(2, 1) {
		return fmt.Errorf("opencl: IL programs need OpenCL 2.1; platform %q is %q: %w",
			c.platform.Name(), c.platform.Version(), errors.ErrUnsupported)
	}
	for _, d := range c.devices {
		if d.ILVersion() != "" {
			return nil
		}
	}
	return fmt.Errorf("opencl: no device of the context accepts an intermediate language (CL_DEVICE_IL_VERSION is empty): %w",
		errors.ErrUnsupported)
}

// Release drops this wrapper's reference. It is idempotent.
func (p *Program) Release() {
	if p != nil {
		p.release(clReleaseProgram)
	}
}

// Retain takes another reference to the same CL program and returns it in
// a new wrapper, which the caller must Release independently. This keeps
// the rule that each wrapper owns exactly one reference.
func (p *Program) Retain() *Program {
	h := p.handle()
	if h == 0 || clRetainProgram(h) != CodeSuccess {
		return &Program{} // a released wrapper: every call on it reports CL_INVALID_PROGRAM
	}
	return newProgram(h)
}

// Handle returns the raw cl_program (0 after Release).
func (p *Program) Handle() uintptr { return p.handle() }

func (p *Program) infoFunc() infoFunc {
	h := p.handle()
	return func(param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32 {
		return clGetProgramInfo(h, param, size, val, sizeRet)
	}
}

// Info returns the raw bytes of any cl_program_info parameter.
func (p *Program) Info(param uint32) ([]byte, error) {
	return infoSlice[byte]("clGetProgramInfo", p.infoFunc(), param)
}

// Devices returns the program's devices, in the order Binaries uses.
func (p *Program) Devices() ([]Device, error) {
	ids, err := infoSlice[uintptr]("clGetProgramInfo", p.infoFunc(), programDevices)
	if err != nil {
		return nil, err
	}
	ds := make([]Device, len(ids))
	for i, id := range ids {
		ds[i] = Device{id: id}
	}
	return ds, nil
}

// KernelNames returns the names of the kernels in the built program.
func (p *Program) KernelNames() ([]string, error) {
	s, err := infoString("clGetProgramInfo", p.infoFunc(), programKernelNames)
	if err != nil || s == "" {
		return nil, err
	}
	return strings.Split(s, ";"), nil
}
