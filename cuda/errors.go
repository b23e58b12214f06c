package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// Sentinel errors for a machine that cannot run CUDA at all, so callers can
// fall back to another backend with errors.Is. Each error that wraps one
// also names the library or device that is missing.
var (
	// ErrNoDriver: libcuda.so.1 is missing or unusable.
	ErrNoDriver = errors.New("cuda: no CUDA driver")
	// ErrNoDevice: the driver loaded but reports no usable GPU.
	ErrNoDevice = errors.New("cuda: no CUDA device")
	// ErrNoNVRTC: no NVRTC library (libnvrtc.so.*) could be loaded.
	ErrNoNVRTC = errors.New("cuda: no NVRTC")
)

// Result is a CUresult, the status every driver call returns.
type Result int32

// Driver results that callers branch on.
const (
	Success                 Result = 0
	ErrorInvalidValue       Result = 1
	ErrorOutOfMemory        Result = 2
	ErrorNotInitialized     Result = 3
	ErrorInsufficientDriver Result = 35
	ErrorNoDevice           Result = 100
	ErrorInvalidDevice      Result = 101
	ErrorInvalidImage       Result = 200
	ErrorInvalidContext     Result = 201
	ErrorNoBinaryForGPU     Result = 209
	ErrorInvalidPTX         Result = 218
	ErrorUnsupportedPTX     Result = 222
	ErrorInvalidHandle      Result = 400
	ErrorNotFound           Result = 500
	ErrorIllegalAddress     Result = 700
	ErrorLaunchOutOfRes     Result = 701
	ErrorLaunchFailed       Result = 719
	ErrorSystemNotReady     Result = 802
	ErrorSystemDriverMismat Result = 803
)

// Error is a failed driver call.
type Error struct {
	Code Result
	Op   string // the driver function, e.g. "cuModuleLoadDataEx"
	Log  string // the JIT's error log, for a module load
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("cuda: %s: %s (%d)", e.Op, resultName(e.Code), e.Code)
	if s := resultString(e.Code); s != "" {
		msg += ": " + s
	}
	if e.Log != "" {
		msg += "\n" + e.Log
	}
	return msg
}

// Is makes errors.Is(err, ErrNoDevice) hold for a driver that reports no
// device.
func (e *Error) Is(target error) bool {
	return target == ErrNoDevice && e.Code == ErrorNoDevice
}

// IsOutOfMemory reports whether err is the driver running out of device
// memory.
func IsOutOfMemory(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == ErrorOutOfMemory
}

// IsImageRejected reports whether err is the driver refusing a module
// image: one built for another device, damaged, or of a PTX version newer
// than the driver's.
func IsImageRejected(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case ErrorInvalidImage, ErrorNoBinaryForGPU, ErrorInvalidPTX, ErrorUnsupportedPTX, ErrorInvalidValue:
		return true
	}
	return false
}

func check(op string, r Result) error {
	if r == Success {
		return nil
	}
	return &Error{Code: r, Op: op}
}

var resultNames = map[Result]string{
	0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
	3: "CUDA_ERROR_NOT_INITIALIZED", 4: "CUDA_ERROR_DEINITIALIZED", 35: "CUDA_ERROR_INSUFFICIENT_DRIVER",
	100: "CUDA_ERROR_NO_DEVICE", 101: "CUDA_ERROR_INVALID_DEVICE", 200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU", 218: "CUDA_ERROR_INVALID_PTX",
	221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", 222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	400: "CUDA_ERROR_INVALID_HANDLE", 500: "CUDA_ERROR_NOT_FOUND", 700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 719: "CUDA_ERROR_LAUNCH_FAILED",
	802: "CUDA_ERROR_SYSTEM_NOT_READY", 803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
}

// resultName names r; the table covers the results this package meets, and
// the driver names the rest where it is loaded.
func resultName(r Result) string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	if cuGetErrorName != nil {
		var p *byte
		if cuGetErrorName(r, &p) == Success {
			return goString(p)
		}
	}
	return "CUDA error"
}

func resultString(r Result) string {
	if cuGetErrorString == nil {
		return ""
	}
	var p *byte
	if cuGetErrorString(r, &p) != Success {
		return ""
	}
	return goString(p)
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cString returns s as a NUL-terminated byte slice.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}
