//go:build !(darwin || freebsd || linux || netbsd)

package opencl

import (
	"errors"
	"runtime"
)

// errUnsupportedOS keeps the package building everywhere; Load reports it
// wrapped in ErrNoRuntime.
var errUnsupportedOS = errors.New("opencl: loading libOpenCL is not implemented on " + runtime.GOOS)

func openLibrary([]string) (uintptr, error)   { return 0, errUnsupportedOS }
func lookup(uintptr, string) (uintptr, error) { return 0, errUnsupportedOS }
func bind(any, uintptr)                       {}
