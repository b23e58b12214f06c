package opencl

import (
	"errors"
	"fmt"
	"strings"
)

// Error codes (cl_int) that callers commonly branch on. The full table of
// names is in codeNames; Error.Error prints the CL name of any code.
const (
	CodeSuccess                    int32 = 0
	CodeDeviceNotFound             int32 = -1
	CodeCompilerNotAvailable       int32 = -3
	CodeMemObjectAllocationFailure int32 = -4
	CodeOutOfResources             int32 = -5
	CodeOutOfHostMemory            int32 = -6
	CodeProfilingInfoNotAvailable  int32 = -7
	CodeBuildProgramFailure        int32 = -11
	CodeCompileProgramFailure      int32 = -15
	CodeLinkerNotAvailable         int32 = -16
	CodeLinkProgramFailure         int32 = -17
	CodeInvalidValue               int32 = -30
	CodeInvalidDevice              int32 = -33
	CodeInvalidContext             int32 = -34
	CodeInvalidBinary              int32 = -42
	CodeInvalidBuildOptions        int32 = -43
	CodeInvalidProgram             int32 = -44
	CodeInvalidProgramExecutable   int32 = -45
	CodeInvalidKernelName          int32 = -46
	CodeInvalidArgIndex            int32 = -49
	CodeInvalidArgValue            int32 = -50
	CodeInvalidArgSize             int32 = -51
	CodeInvalidKernelArgs          int32 = -52
	CodeInvalidWorkDimension       int32 = -53
	CodeInvalidWorkGroupSize       int32 = -54
	CodeInvalidOperation           int32 = -59
	CodeInvalidCompilerOptions     int32 = -66
	CodeInvalidLinkerOptions       int32 = -67
	CodePlatformNotFoundKHR        int32 = -1001
)

var codeNames = map[int32]string{
	0: "CL_SUCCESS", -1: "CL_DEVICE_NOT_FOUND", -2: "CL_DEVICE_NOT_AVAILABLE",
	-3: "CL_COMPILER_NOT_AVAILABLE", -4: "CL_MEM_OBJECT_ALLOCATION_FAILURE",
	-5: "CL_OUT_OF_RESOURCES", -6: "CL_OUT_OF_HOST_MEMORY",
	-7: "CL_PROFILING_INFO_NOT_AVAILABLE", -8: "CL_MEM_COPY_OVERLAP",
	-9: "CL_IMAGE_FORMAT_MISMATCH", -10: "CL_IMAGE_FORMAT_NOT_SUPPORTED",
	-11: "CL_BUILD_PROGRAM_FAILURE", -12: "CL_MAP_FAILURE",
	-13: "CL_MISALIGNED_SUB_BUFFER_OFFSET", -14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
	-15: "CL_COMPILE_PROGRAM_FAILURE", -16: "CL_LINKER_NOT_AVAILABLE",
	-17: "CL_LINK_PROGRAM_FAILURE", -18: "CL_DEVICE_PARTITION_FAILED",
	-19: "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
	-30: "CL_INVALID_VALUE", -31: "CL_INVALID_DEVICE_TYPE", -32: "CL_INVALID_PLATFORM",
	-33: "CL_INVALID_DEVICE", -34: "CL_INVALID_CONTEXT", -35: "CL_INVALID_QUEUE_PROPERTIES",
	-36: "CL_INVALID_COMMAND_QUEUE", -37: "CL_INVALID_HOST_PTR", -38: "CL_INVALID_MEM_OBJECT",
	-39: "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR", -40: "CL_INVALID_IMAGE_SIZE",
	-41: "CL_INVALID_SAMPLER", -42: "CL_INVALID_BINARY", -43: "CL_INVALID_BUILD_OPTIONS",
	-44: "CL_INVALID_PROGRAM", -45: "CL_INVALID_PROGRAM_EXECUTABLE",
	-46: "CL_INVALID_KERNEL_NAME", -47: "CL_INVALID_KERNEL_DEFINITION",
	-48: "CL_INVALID_KERNEL", -49: "CL_INVALID_ARG_INDEX", -50: "CL_INVALID_ARG_VALUE",
	-51: "CL_INVALID_ARG_SIZE", -52: "CL_INVALID_KERNEL_ARGS", -53: "CL_INVALID_WORK_DIMENSION",
	-54: "CL_INVALID_WORK_GROUP_SIZE", -55: "CL_INVALID_WORK_ITEM_SIZE",
	-56: "CL_INVALID_GLOBAL_OFFSET", -57: "CL_INVALID_EVENT_WAIT_LIST", -58: "CL_INVALID_EVENT",
	-59: "CL_INVALID_OPERATION", -60: "CL_INVALID_GL_OBJECT", -61: "CL_INVALID_BUFFER_SIZE",
	-62: "CL_INVALID_MIP_LEVEL", -63: "CL_INVALID_GLOBAL_WORK_SIZE", -64: "CL_INVALID_PROPERTY",
	-65: "CL_INVALID_IMAGE_DESCRIPTOR", -66: "CL_INVALID_COMPILER_OPTIONS",
	-67: "CL_INVALID_LINKER_OPTIONS", -68: "CL_INVALID_DEVICE_PARTITION_COUNT",
	-69: "CL_INVALID_PIPE_SIZE", -70: "CL_INVALID_DEVICE_QUEUE", -71: "CL_INVALID_SPEC_ID",
	-72: "CL_MAX_SIZE_RESTRICTION_EXCEEDED", -1001: "CL_PLATFORM_NOT_FOUND_KHR",
}

// CodeName returns the CL name of an error code, such as
// "CL_BUILD_PROGRAM_FAILURE", or "CL_UNKNOWN_ERROR" for a code it does not know
// (vendor extensions use their own ranges).
func CodeName(code int32) string {
	if s, ok := codeNames[code]; ok {
		return s
	}
	return "CL_UNKNOWN_ERROR"
}

// Error is a failed OpenCL call: the cl_int it returned and the C function's
// name. Use errors.As to reach it; errors.Is(err, &Error{Code: c}) matches
// any Error with code c.
type Error struct {
	Code int32  // the cl_int status, e.g. -11 for CL_BUILD_PROGRAM_FAILURE
	Func string // the C entry point, e.g. "clBuildProgram"
}

func newError(code int32, fn string) *Error { return &Error{Code: code, Func: fn} }

// check turns a cl_int status into nil or an *Error. It returns error, not
// *Error, so a nil result is a nil interface.
func check(code int32, fn string) error {
	if code == CodeSuccess {
		return nil
	}
	return newError(code, fn)
}

// Error formats as "opencl: clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11)".
func (e *Error) Error() string {
	return fmt.Sprintf("opencl: %s: %s (%d)", e.Func, CodeName(e.Code), e.Code)
}

// Is reports whether target is an *Error with the same code and, when the
// target names one, the same function.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Func == "" || t.Func == e.Func)
}

// IsOutOfMemory reports whether the code is one of the three ways OpenCL
// says it ran out of memory: on the device (CL_MEM_OBJECT_ALLOCATION_FAILURE),
// in driver resources (CL_OUT_OF_RESOURCES), or on the host
// (CL_OUT_OF_HOST_MEMORY). A cache uses this to evict and retry rather than
// treat the program as broken.
func (e *Error) IsOutOfMemory() bool {
	switch e.Code {
	case CodeMemObjectAllocationFailure, CodeOutOfResources, CodeOutOfHostMemory:
		return true
	}
	return false
}

// IsOutOfMemory reports whether err wraps an *Error whose IsOutOfMemory is
// true.
func IsOutOfMemory(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.IsOutOfMemory()
}

// maxLogInError bounds the build log quoted in BuildError.Error; compilers
// can emit megabytes of warnings, and the full text stays in BuildError.Log.
const maxLogInError = 4 << 10

// BuildError is a failed clBuildProgram, clCompileProgram or clLinkProgram.
// Log holds every device's build log, each headed by the device name.
type BuildError struct {
	Log     string // per-device logs joined, as the compiler wrote them
	Options string // the options the build was given
	Err     *Error // the status the call returned
}

// Error gives the status, the options and the (possibly truncated) log.
func (e *BuildError) Error() string {
	log := strings.TrimSpace(e.Log)
	if len(log) > maxLogInError {
		log = log[:maxLogInError] + "\n... (log truncated; see BuildError.Log)"
	}
	return fmt.Sprintf("%v; options %q; log:\n%s", e.Err, e.Options, log)
}

// Unwrap returns the underlying *Error so errors.As and IsOutOfMemory see it.
func (e *BuildError) Unwrap() error { return e.Err }
