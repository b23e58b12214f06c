package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// JITOption is a CUjit_option the caller may set when loading a module
// from PTX: the driver's JIT compiler reads them. A CUBIN ignores most.
type JITOption int32

// JIT options with an integer value.
const (
	JITMaxRegisters      JITOption = 0
	JITThreadsPerBlock   JITOption = 1
	JITOptimizationLevel JITOption = 7  // 0..4, default 4
	JITGenerateDebugInfo JITOption = 11 // 0 or 1
	JITLogVerbose        JITOption = 12 // 0 or 1
	JITGenerateLineInfo  JITOption = 13 // 0 or 1
	JITCacheMode         JITOption = 14
)

// The options LoadModule sets itself, for the logs and the JIT's time.
const (
	jitWallTime       int32 = 2
	jitInfoLog        int32 = 3
	jitInfoLogSize    int32 = 4
	jitErrorLog       int32 = 5
	jitErrorLogSize   int32 = 6
	jitLogBufferBytes       = 16 << 10
)

// Module is a loaded module (CUmodule): a CUBIN, PTX or fatbin image in a
// context. Its functions stay valid until Unload.
type Module struct {
	h   uintptr
	ctx *Context
	// InfoLog is what the driver's JIT reported on a successful load (PTX
	// only; empty for a CUBIN it loaded as is).
	InfoLog string
	// JITMillis is the time the driver reports spending in its JIT
	// compiler and linker during the load.
	JITMillis float32
}

// LoadModule loads an image (CUBIN, fatbin or PTX text) into c with the
// given JIT options. A failure to load is an *Error whose Log holds the
// JIT's error log. With lazy loading (the default), the driver defers each
// function's upload to the device to its first launch: time a warm start
// to the first completed launch, not to this call.
func (c *Context) LoadModule(image []byte, opts map[JITOption]int) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: LoadModule: empty image")
	}
	if isPTX(image) && image[len(image)-1] != 0 {
		image = append(bytes.Clone(image), 0) // PTX is read as a C string
	}
	a := loadArgsPool.Get().(*loadArgs)
	defer loadArgsPool.Put(a)
	a.set(opts)
	// The driver writes the logs through the addresses in vals, which the
	// garbage collector cannot see there: pin the buffers for the call.
	var pin runtime.Pinner
	pin.Pin(a)
	defer pin.Unpin()
	m := &Module{ctx: c}
	err := c.call("cuModuleLoadDataEx", func() Result {
		return cuModuleLoadDataEx(&m.h, unsafe.Pointer(&image[0]), uint32(len(a.keys)), &a.keys[0], &a.vals[0])
	})
	runtime.KeepAlive(image)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Log = strings.TrimSpace(logText(a.errLog[:], a.vals[4]))
		}
		return nil, err
	}
	m.InfoLog = strings.TrimSpace(logText(a.infoLog[:], a.vals[2]))
	m.JITMillis = math.Float32frombits(uint32(a.vals[0]))
	return m, nil
}

// loadArgs is what one LoadModule hands the driver: the JIT options and
// the buffers for its logs. Loads take them from a pool: allocating and
// zeroing two log buffers on every load was three quarters of what a warm
// hit of a small module allocated (bench/RESULTS-cuda.md, issue 18), for
// logs that a CUBIN's load leaves empty.
type loadArgs struct {
	infoLog, errLog [jitLogBufferBytes]byte
	keys            []int32
	vals            []uintptr
}

var loadArgsPool = sync.Pool{New: func() any { return new(loadArgs) }}

// set fills a's options for a load with the caller's opts: the wall time
// first, then the logs (the indexes LoadModule reads back), then opts.
// A buffer from the pool may hold an earlier load's log: each starts
// empty, and logText reads no further than the driver says it wrote.
func (a *loadArgs) set(opts map[JITOption]int) {
	a.infoLog[0], a.errLog[0] = 0, 0
	a.keys = append(a.keys[:0], jitWallTime, jitInfoLog, jitInfoLogSize, jitErrorLog, jitErrorLogSize)
	a.vals = append(a.vals[:0], 0, uintptr(unsafe.Pointer(&a.infoLog[0])), jitLogBufferBytes, uintptr(unsafe.Pointer(&a.errLog[0])), jitLogBufferBytes)
	for k, v := range opts {
		a.keys = append(a.keys, int32(k))
		a.vals = append(a.vals, uintptr(v))
	}
}

// logText returns the log the driver wrote into buf: up to its first NUL,
// and no more than filled bytes where the driver reports a length (it
// writes the bytes it used into a log's size option). Bytes past those
// are left from an earlier load.
func logText(buf []byte, filled uintptr) string {
	if filled > 0 && filled < uintptr(len(buf)) {
		buf = buf[:filled]
	}
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		buf = buf[:i]
	}
	return string(buf)
}

// isPTX reports whether image is PTX text rather than an ELF CUBIN or a
// fatbin.
func isPTX(image []byte) bool {
	return !bytes.HasPrefix(image, []byte("\x7fELF")) && !bytes.HasPrefix(image, []byte{0x50, 0xed, 0x55, 0xba})
}

// Context returns the module's context.
func (m *Module) Context() *Context { return m.ctx }

// Unload unloads the module; its functions become invalid.
func (m *Module) Unload() error {
	return m.ctx.call("cuModuleUnload", func() Result { return cuModuleUnload(m.h) })
}

// Function returns the module's function of the given (mangled or
// extern "C") name. The handle stays valid until the module is unloaded.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{ctx: m.ctx, name: name}
	err := m.ctx.call("cuModuleGetFunction", func() Result { return cuModuleGetFunction(&f.h, m.h, name) })
	if err != nil {
		return nil, fmt.Errorf("cuda: function %q: %w", name, err)
	}
	return f, nil
}

// FunctionAttribute is a CUfunction_attribute.
type FunctionAttribute int32

// Function attributes.
const (
	FuncMaxThreadsPerBlock    FunctionAttribute = 0
	FuncSharedSizeBytes       FunctionAttribute = 1
	FuncConstSizeBytes        FunctionAttribute = 2
	FuncLocalSizeBytes        FunctionAttribute = 3
	FuncNumRegs               FunctionAttribute = 4
	FuncPTXVersion            FunctionAttribute = 5
	FuncBinaryVersion         FunctionAttribute = 6
	FuncMaxDynamicSharedBytes FunctionAttribute = 8
)

// Function is a kernel of a loaded module (CUfunction). It holds no state
// of its own, so many goroutines may launch it at once.
type Function struct {
	h    uintptr
	ctx  *Context
	name string
}

// Name returns the name the function was looked up by.
func (f *Function) Name() string { return f.name }

// Attribute returns one attribute of the function. On a lazily loaded
// module, asking for one loads the function onto the device.
func (f *Function) Attribute(a FunctionAttribute) (int, error) {
	var v int32
	err := f.ctx.call("cuFuncGetAttribute", func() Result { return cuFuncGetAttribute(&v, int32(a), f.h) })
	return int(v), err
}

// SetAttribute sets one attribute, e.g. FuncMaxDynamicSharedBytes to
// launch with more than 48 KB of dynamic shared memory.
func (f *Function) SetAttribute(a FunctionAttribute, v int) error {
	return f.ctx.call("cuFuncSetAttribute", func() Result { return cuFuncSetAttribute(f.h, int32(a), int32(v)) })
}
