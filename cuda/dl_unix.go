//go:build darwin || freebsd || linux || netbsd

package cuda

import (
	"errors"

	"github.com/ebitengine/purego"
)

// openLibrary dlopens the first of names that loads and returns its handle
// and the name that loaded.
func openLibrary(names []string) (uintptr, string, error) {
	var errs []error
	for _, name := range names {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			return h, name, nil
		}
		errs = append(errs, err)
	}
	return 0, "", errors.Join(errs...)
}

func lookup(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// bind sets the Go func variable that fn points at to call sym.
func bind(fn any, sym uintptr) { purego.RegisterFunc(fn, sym) }

// openLibraryGlobal dlopens path with its symbols visible to libraries
// loaded later.
func openLibraryGlobal(path string) error {
	_, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	return err
}
