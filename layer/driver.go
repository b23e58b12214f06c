package main

/*
#cgo LDFLAGS: -lpthread -ldl
#include <stdlib.h>
#include "layer.h"
*/
import "C"

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/kcache/kcache/internal/binread"
)

// The driver calls of the Go half, all through the next layer's dispatch
// table (layer.c's kc_t_* trampolines).

// clError is an OpenCL error code from the driver.
type clError C.cl_int

func (e clError) Error() string { return fmt.Sprintf("OpenCL error %d", int(e)) }

func check(err C.cl_int) error {
	if err != C.CL_SUCCESS {
		return clError(err)
	}
	return nil
}

// infoQuery is one clGet*Info query of the next layer with its object and
// parameter bound: it takes the value's buffer, its size and where the
// value's size goes, as the query does.
type infoQuery func(size C.size_t, value unsafe.Pointer, sizeRet *C.size_t) C.cl_int

// bytes reads a variable-length value: its size, then the value.
func (q infoQuery) bytes() ([]byte, error) {
	var n C.size_t
	if err := check(q(0, nil, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	buf := C.malloc(n)
	defer C.free(buf)
	if err := check(q(n, buf, nil)); err != nil {
		return nil, err
	}
	return C.GoBytes(buf, C.int(n)), nil
}

// string reads a string value, up to its terminating NUL; "" where the
// query fails: a missing string is keyed as empty, as a driver that
// reports nothing would be.
func (q infoQuery) string() string {
	b, _ := q.bytes()
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// programBytes reads a variable-length program query.
func programBytes(p C.cl_program, param C.cl_program_info) ([]byte, error) {
	return infoQuery(func(size C.size_t, value unsafe.Pointer, sizeRet *C.size_t) C.cl_int {
		return C.kc_t_get_program_info(p, param, size, value, sizeRet)
	}).bytes()
}

// programSource returns a program's source as the driver keeps it: the
// application's strings joined.
func programSource(p C.cl_program) ([]byte, error) {
	b, err := programBytes(p, C.CL_PROGRAM_SOURCE)
	if len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b, err
}

func programContext(p C.cl_program) (C.cl_context, error) {
	var c C.cl_context
	err := check(C.kc_t_get_program_info(p, C.CL_PROGRAM_CONTEXT, C.size_t(unsafe.Sizeof(c)), unsafe.Pointer(&c), nil))
	return c, err
}

func programDevices(p C.cl_program) ([]C.cl_device_id, error) {
	b, err := programBytes(p, C.CL_PROGRAM_DEVICES)
	if err != nil {
		return nil, err
	}
	n := len(b) / int(unsafe.Sizeof(C.cl_device_id(nil)))
	if n == 0 {
		return nil, nil
	}
	return append([]C.cl_device_id(nil), unsafe.Slice((*C.cl_device_id)(unsafe.Pointer(&b[0])), n)...), nil
}

// buildLog returns the driver's build log of p for d.
func buildLog(p C.cl_program, d C.cl_device_id) string {
	return infoQuery(func(size C.size_t, value unsafe.Pointer, sizeRet *C.size_t) C.cl_int {
		return C.kc_t_get_program_build_info(p, d, C.CL_PROGRAM_BUILD_LOG, size, value, sizeRet)
	}).string()
}

// binaries returns p's binary for each of its devices, in CL_PROGRAM_DEVICES
// order. The driver may copy more than the size it reported when the
// application's threads query or launch the program meanwhile:
// internal/binread reads the binaries safely, through the layer's
// serialized program queries.
func binaries(p C.cl_program, ndev int) ([][]byte, error) {
	sizes := func() ([]uintptr, error) {
		sizes := make([]C.size_t, ndev)
		n := C.size_t(ndev) * C.size_t(unsafe.Sizeof(sizes[0]))
		if err := check(C.kc_t_get_program_info(p, C.CL_PROGRAM_BINARY_SIZES, n, unsafe.Pointer(&sizes[0]), nil)); err != nil {
			return nil, err
		}
		out := make([]uintptr, ndev)
		for i, s := range sizes {
			out[i] = uintptr(s)
		}
		return out, nil
	}
	copyOut := func(ptrs []unsafe.Pointer) error {
		// The driver keeps no pointer past the call, but cgo forbids
		// passing Go memory that holds pointers: copy the array to C.
		n := C.size_t(ndev) * C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))
		arr := (*unsafe.Pointer)(C.malloc(n))
		defer C.free(unsafe.Pointer(arr))
		copy(unsafe.Slice(arr, ndev), ptrs)
		return check(C.kc_t_get_program_info(p, C.CL_PROGRAM_BINARIES, n, unsafe.Pointer(arr), nil))
	}
	return binread.Read(binread.Funcs{Sizes: sizes, Copy: copyOut})
}

// buildProgram builds p synchronously; devs nil means the program's devices.
func buildProgram(p C.cl_program, devs []C.cl_device_id, options string) C.cl_int {
	return withArgs(devs, options, func(n C.cl_uint, dp *C.cl_device_id, opts *C.char) C.cl_int {
		return C.kc_t_build_program(p, n, dp, opts)
	})
}

// compileProgram compiles p synchronously, without embedded headers.
func compileProgram(p C.cl_program, devs []C.cl_device_id, options string) C.cl_int {
	return withArgs(devs, options, func(n C.cl_uint, dp *C.cl_device_id, opts *C.char) C.cl_int {
		return C.kc_t_compile_program(p, n, dp, opts)
	})
}

// withArgs runs call with devs and options in C memory, for the duration
// of the call; devs empty is a NULL list.
func withArgs(devs []C.cl_device_id, options string, call func(n C.cl_uint, dp *C.cl_device_id, opts *C.char) C.cl_int) C.cl_int {
	opts := C.CString(options)
	defer C.free(unsafe.Pointer(opts))
	var dp *C.cl_device_id
	if len(devs) > 0 {
		dp = cDevices(devs)
		defer C.free(unsafe.Pointer(dp))
	}
	return call(C.cl_uint(len(devs)), dp, opts)
}

// cDevices copies devs to C memory, which the driver may keep a pointer
// into for the call.
func cDevices(devs []C.cl_device_id) *C.cl_device_id {
	p := (*C.cl_device_id)(C.malloc(C.size_t(len(devs)) * C.size_t(unsafe.Sizeof(devs[0]))))
	copy(unsafe.Slice(p, len(devs)), devs)
	return p
}

// programFromBinaries makes a program of ctx for devs from bins, and
// builds it when build is set. The driver verifies each binary; a refused
// one is an error.
func programFromBinaries(ctx C.cl_context, devs []C.cl_device_id, bins [][]byte, options string, build bool) (C.cl_program, error) {
	n := len(devs)
	dp := cDevices(devs)
	defer C.free(unsafe.Pointer(dp))
	lengths := (*C.size_t)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.size_t(0)))))
	defer C.free(unsafe.Pointer(lengths))
	ptrs := (**C.uchar)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.uchar)(nil)))))
	defer C.free(unsafe.Pointer(ptrs))
	status := (*C.cl_int)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.cl_int(0)))))
	defer C.free(unsafe.Pointer(status))
	ls, ps := unsafe.Slice(lengths, n), unsafe.Slice(ptrs, n)
	for i, b := range bins {
		ls[i] = C.size_t(len(b))
		ps[i] = (*C.uchar)(C.CBytes(b))
		defer C.free(unsafe.Pointer(ps[i]))
	}
	var cerr C.cl_int
	prog := C.kc_t_create_program_with_binary(ctx, C.cl_uint(n), dp, lengths, ptrs, status, &cerr)
	if err := check(cerr); err != nil || prog == nil {
		return nil, fmt.Errorf("making a program from a cached binary: %w", clError(cerr))
	}
	if !build {
		return prog, nil
	}
	if err := check(buildProgram(prog, devs, options)); err != nil {
		C.kc_t_release_program(prog)
		return nil, fmt.Errorf("building a program from a cached binary: %w", err)
	}
	return prog, nil
}

func deviceString(d C.cl_device_id, param C.cl_device_info) string {
	return infoQuery(func(size C.size_t, value unsafe.Pointer, sizeRet *C.size_t) C.cl_int {
		return C.kc_t_get_device_info(d, param, size, value, sizeRet)
	}).string()
}

func platformString(p C.cl_platform_id, param C.cl_platform_info) string {
	return infoQuery(func(size C.size_t, value unsafe.Pointer, sizeRet *C.size_t) C.cl_int {
		return C.kc_t_get_platform_info(p, param, size, value, sizeRet)
	}).string()
}

func devicePlatform(d C.cl_device_id) C.cl_platform_id {
	var p C.cl_platform_id
	C.kc_t_get_device_info(d, C.CL_DEVICE_PLATFORM, C.size_t(unsafe.Sizeof(p)), unsafe.Pointer(&p), nil)
	return p
}
