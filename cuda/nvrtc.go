package cuda

import (
	"fmt"
	"runtime"
	"strings"
)

// nvrtcResult is an nvrtcResult status.
type nvrtcResult int32

const (
	nvrtcSuccess          nvrtcResult = 0
	nvrtcOutOfMemory      nvrtcResult = 1
	nvrtcCompilationError nvrtcResult = 6
)

// NVRTCError is a failed NVRTC call other than a compile error.
type NVRTCError struct {
	Code int32
	Op   string
}

func (e *NVRTCError) Error() string {
	msg := ""
	if nvrtcGetErrorString != nil {
		msg = nvrtcGetErrorString(nvrtcResult(e.Code))
	}
	return fmt.Sprintf("cuda: %s: %s (%d)", e.Op, msg, e.Code)
}

// OutOfMemory reports whether NVRTC ran out of host memory.
func (e *NVRTCError) OutOfMemory() bool { return nvrtcResult(e.Code) == nvrtcOutOfMemory }

func nvrtcCheck(op string, r nvrtcResult) error {
	if r == nvrtcSuccess {
		return nil
	}
	return &NVRTCError{Code: int32(r), Op: op}
}

// CompileError is a program NVRTC rejected; Log is its compile log.
type CompileError struct {
	Name string // the program's name
	Log  string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("cuda: NVRTC could not compile %s:\n%s", e.Name, e.Log)
}

// Header is a header handed to NVRTC in memory: the source's
// #include "Name" finds Content without touching the file system.
type Header struct {
	Name    string
	Content []byte
}

// Program is an NVRTC program (nvrtcProgram). It is not safe for
// concurrent use; distinct programs may compile concurrently.
type Program struct {
	h    uintptr
	name string
}

// NewProgram creates an NVRTC program from CUDA C++ source. name is what
// NVRTC calls the program in diagnostics (a file name, say); headers are
// the in-memory headers.
func NewProgram(src []byte, name string, headers []Header) (*Program, error) {
	if err := LoadNVRTC(); err != nil {
		return nil, err
	}
	if name == "" {
		name = "program.cu"
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	srcC := cString(string(src))
	nameC := cString(name)
	contents := make([]*byte, max(len(headers), 1))
	names := make([]*byte, max(len(headers), 1))
	for i, h := range headers {
		contents[i] = &cString(string(h.Content))[0]
		names[i] = &cString(h.Name)[0]
		pin.Pin(contents[i])
		pin.Pin(names[i])
	}
	pin.Pin(&contents[0])
	pin.Pin(&names[0])
	p := &Program{name: name}
	if err := nvrtcCheck("nvrtcCreateProgram", nvrtcCreateProgram(&p.h, &srcC[0], &nameC[0], int32(len(headers)), &contents[0], &names[0])); err != nil {
		return nil, err
	}
	return p, nil
}

// AddNameExpression asks NVRTC to instantiate and keep the __global__
// function or __device__ variable named by expr (e.g. "gemm<float, 16>"),
// whose mangled name LoweredName gives after Compile.
func (p *Program) AddNameExpression(expr string) error {
	e := cString(expr)
	return nvrtcCheck("nvrtcAddNameExpression", nvrtcAddNameExpression(p.h, &e[0]))
}

// Compile compiles the program with NVRTC options ("-arch=sm_90",
// "-std=c++17", "-I dir", ...). A rejected program is a *CompileError
// holding the log.
func (p *Program) Compile(options []string) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	opts := make([]*byte, max(len(options), 1))
	for i, o := range options {
		opts[i] = &cString(o)[0]
		pin.Pin(opts[i])
	}
	pin.Pin(&opts[0])
	r := nvrtcCompileProgram(p.h, int32(len(options)), &opts[0])
	if r == nvrtcCompilationError {
		log, _ := p.Log()
		return &CompileError{Name: p.name, Log: log}
	}
	return nvrtcCheck("nvrtcCompileProgram", r)
}

// Log returns the compile log.
func (p *Program) Log() (string, error) {
	b, err := p.output("nvrtcGetProgramLog", nvrtcGetProgramLogSize, nvrtcGetProgramLog)
	return strings.TrimRight(string(b), "\x00\n "), err
}

// PTX returns the compiled PTX text, without its terminating NUL.
func (p *Program) PTX() ([]byte, error) {
	b, err := p.output("nvrtcGetPTX", nvrtcGetPTXSize, nvrtcGetPTX)
	if n := len(b); n > 0 && b[n-1] == 0 {
		b = b[:n-1]
	}
	return b, err
}

// CUBIN returns the compiled CUBIN. It exists only when the program was
// compiled for a real architecture (-arch=sm_XX); for a virtual one
// (compute_XX) NVRTC produces PTX alone and CUBIN returns an error.
func (p *Program) CUBIN() ([]byte, error) {
	if nvrtcGetCUBINSize == nil {
		return nil, fmt.Errorf("cuda: this NVRTC cannot produce CUBIN (CUDA 11.1 or newer can)")
	}
	b, err := p.output("nvrtcGetCUBIN", nvrtcGetCUBINSize, nvrtcGetCUBIN)
	if err == nil && len(b) == 0 {
		return nil, fmt.Errorf("cuda: %s: NVRTC produced no CUBIN (compiled for a virtual architecture?)", p.name)
	}
	return b, err
}

func (p *Program) output(op string, size func(uintptr, *uintptr) nvrtcResult, get func(uintptr, *byte) nvrtcResult) ([]byte, error) {
	var n uintptr
	if err := nvrtcCheck(op+"Size", size(p.h, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	buf := make([]byte, n)
	if err := nvrtcCheck(op, get(p.h, &buf[0])); err != nil {
		return nil, err
	}
	return buf, nil
}

// LoweredName returns the mangled name of a name expression added before
// Compile.
func (p *Program) LoweredName(expr string) (string, error) {
	e := cString(expr)
	var lowered *byte
	if err := nvrtcCheck("nvrtcGetLoweredName", nvrtcGetLoweredName(p.h, &e[0], &lowered)); err != nil {
		return "", fmt.Errorf("%w: name expression %q", err, expr)
	}
	return goString(lowered), nil
}

// Destroy frees the program.
func (p *Program) Destroy() error {
	return nvrtcCheck("nvrtcDestroyProgram", nvrtcDestroyProgram(&p.h))
}
