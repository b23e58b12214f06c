package opencl

import (
	"strings"
	"unsafe"
)

// infoFunc is one of the clGet*Info entry points with its object (and, for
// per-device queries, device) already bound. All of them share the
// size-query-then-fill protocol that the helpers below implement once.
type infoFunc func(param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32

// infoSlice returns a parameter as a fresh slice of T. T must hold no Go
// pointers: the C side writes raw bytes into it.
func infoSlice[T any](fn string, f infoFunc, param uint32) ([]T, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	var size uintptr
	if err := check(f(param, 0, nil, &size), fn); err != nil {
		return nil, err
	}
	var zero T
	n := size / unsafe.Sizeof(zero)
	if n == 0 {
		return nil, nil
	}
	s := make([]T, n)
	if err := check(f(param, n*unsafe.Sizeof(zero), unsafe.Pointer(&s[0]), nil), fn); err != nil {
		return nil, err
	}
	return s, nil
}

// infoValue returns a fixed-size parameter (cl_uint, size_t, a handle, ...).
func infoValue[T any](fn string, f infoFunc, param uint32) (T, error) {
	var v T
	if err := Load(); err != nil {
		return v, err
	}
	err := check(f(param, unsafe.Sizeof(v), unsafe.Pointer(&v), nil), fn)
	return v, err
}

// infoString returns a char[] parameter without its NUL terminator.
func infoString(fn string, f infoFunc, param uint32) (string, error) {
	b, err := infoSlice[byte](fn, f, param)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\x00"), nil
}
