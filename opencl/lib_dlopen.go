//go:build darwin || freebsd || linux || netbsd

package opencl

import (
	"errors"

	"github.com/ebitengine/purego"
)

// openLibrary dlopens the first library in names that loads. RTLD_GLOBAL is
// not needed: ICD drivers are opened by the loader itself.
func openLibrary(names []string) (uintptr, error) {
	var errs []error
	for _, name := range names {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			return h, nil
		}
		errs = append(errs, err)
	}
	return 0, errors.Join(errs...)
}

func lookup(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// bind sets the Go func variable that fn points at to call sym.
func bind(fn any, sym uintptr) { purego.RegisterFunc(fn, sym) }
