//go:build !(darwin || freebsd || linux || netbsd)

package cuda

import (
	"errors"
	"runtime"
)

// errUnsupportedOS keeps the package building everywhere; loading reports
// it wrapped in ErrNoDriver or ErrNoNVRTC.
var errUnsupportedOS = errors.New("cuda: loading libraries is not implemented on " + runtime.GOOS)

func openLibrary([]string) (uintptr, string, error) { return 0, "", errUnsupportedOS }
func lookup(uintptr, string) (uintptr, error)       { return 0, errUnsupportedOS }
func bind(any, uintptr)                             {}
func openLibraryGlobal(string) error                { return errUnsupportedOS }
