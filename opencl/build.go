package opencl

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"github.com/kcache/kcache/internal/keyparts"
)

// Build compiles and links the program for devs (nil: all of the
// program's devices) with options, blocking until the compiler is done.
// The calling goroutine's OS thread blocks in C for the whole compile;
// other goroutines keep running. On failure the error is a *BuildError
// carrying every device's log.
func (p *Program) Build(devs []Device, options string) error {
	if err := Load(); err != nil {
		return err
	}
	ids := deviceIDs(devs)
	keyparts.NotePoCLBuild(os.LookupEnv)
	code := clBuildProgram(p.handle(), uint32(len(ids)), firstOrNil(ids), options, 0, 0)
	if code == CodeSuccess {
		return nil
	}
	return p.buildError(devs, options, newError(code, "clBuildProgram"))
}

// Compile compiles the program's source to an object for devs (nil: all)
// without linking, as the first step of Link. headers maps each name the
// source may #include to a program created from that header's source;
// they are passed embedded, so nothing is read from the file system.
func (p *Program) Compile(devs []Device, options string, headers map[string]*Program) error {
	if err := Load(); err != nil {
		return err
	}
	if clCompileProgram == nil {
		return fmt.Errorf("opencl: clCompileProgram needs OpenCL 1.2: %w", errors.ErrUnsupported)
	}
	names := slices.Sorted(maps.Keys(headers)) // a fixed order keeps builds reproducible
	hdrs := make([]uintptr, len(names))
	cnames := make([][]byte, len(names))
	for i, n := range names {
		if headers[n] == nil || n == "" {
			return fmt.Errorf("opencl: Compile: header %q has no program", n)
		}
		hdrs[i] = headers[n].handle()
		cnames[i] = append([]byte(n), 0)
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	namePtrs := pinnedPointers(&pin, cnames)
	ids := deviceIDs(devs)
	keyparts.NotePoCLBuild(os.LookupEnv)
	code := clCompileProgram(p.handle(), uint32(len(ids)), firstOrNil(ids), options,
		uint32(len(hdrs)), firstOrNil(hdrs), unsafe.Pointer(firstOrNil(namePtrs)), 0, 0)
	if code == CodeSuccess {
		return nil
	}
	return p.buildError(devs, options, newError(code, "clCompileProgram"))
}

// Link links compiled programs (see Compile) into an executable program
// for devs (nil: all devices of c). The result is owned by the caller. On
// failure the error is a *BuildError with the linker's log.
func Link(c *Context, devs []Device, options string, progs ...*Program) (*Program, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if clLinkProgram == nil {
		return nil, fmt.Errorf("opencl: clLinkProgram needs OpenCL 1.2: %w", errors.ErrUnsupported)
	}
	hs := make([]uintptr, len(progs))
	for i, p := range progs {
		if p == nil {
			return nil, fmt.Errorf("opencl: Link: program %d is nil", i)
		}
		hs[i] = p.handle()
	}
	ids := deviceIDs(devs)
	var errc int32
	keyparts.NotePoCLBuild(os.LookupEnv)
	h := clLinkProgram(c.handle(), uint32(len(ids)), firstOrNil(ids), options,
		uint32(len(hs)), firstOrNil(hs), 0, 0, &errc)
	if errc == CodeSuccess {
		return newProgram(h), nil
	}
	if h == 0 {
		return nil, &BuildError{Options: options, Err: newError(errc, "clLinkProgram")}
	}
	// A failed link may still return a program: it is the only place the
	// linker's log lives, so read it before releasing.
	failed := newProgram(h)
	defer failed.Release()
	if devs == nil {
		devs = c.devices
	}
	return nil, failed.buildError(devs, options, newError(errc, "clLinkProgram"))
}

// buildError gathers the logs of devs (nil: the program's devices).
func (p *Program) buildError(devs []Device, options string, err *Error) *BuildError {
	if devs == nil {
		devs, _ = p.Devices() // without the list there is no log to gather; the code still says what failed
	}
	var logs []string
	for _, d := range devs {
		if log := strings.TrimSpace(p.BuildLog(d)); log != "" {
			logs = append(logs, fmt.Sprintf("--- %s ---\n%s", d.Name(), log))
		}
	}
	return &BuildError{Log: strings.Join(logs, "\n"), Options: options, Err: err}
}

// BuildLog returns the compiler's log for d from the last build, compile
// or link, or "" if there is none or the query fails.
func (p *Program) BuildLog(d Device) string {
	s, _ := infoString("clGetProgramBuildInfo", p.buildInfoFunc(d), programBuildLog) // "" on error, as documented
	return s
}

// BuildStatus returns CL_PROGRAM_BUILD_STATUS for d: 0 (CL_BUILD_SUCCESS),
// -1 (none), -2 (error) or -3 (in progress).
func (p *Program) BuildStatus(d Device) (int32, error) {
	return infoValue[int32]("clGetProgramBuildInfo", p.buildInfoFunc(d), programBuildStatus)
}

func (p *Program) buildInfoFunc(d Device) infoFunc {
	h := p.handle()
	return func(param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32 {
		return clGetProgramBuildInfo(h, d.id, param, size, val, sizeRet)
	}
}
