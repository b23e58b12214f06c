package cuda

import (
	"path/filepath"
	"strings"

	"github.com/kcache/kcache/internal/keyparts"
)

// mappedPath returns the file that the library dlopened as name is mapped
// from, found among the files mapped into this process; name itself where
// it cannot be found. A soname resolves through the loader's search path,
// and the key wants the file actually in use.
func mappedPath(name string) string {
	if filepath.IsAbs(name) {
		if p, err := filepath.EvalSymlinks(name); err == nil {
			return p
		}
		return name
	}
	// The file behind a soname carries a longer version: libcuda.so.1 is
	// libcuda.so.580.95.05, libnvrtc.so.13 is libnvrtc.so.13.0.88.
	stem := filepath.Base(name)
	if i := strings.Index(stem, ".so"); i >= 0 {
		stem = stem[:i+3]
	}
	for _, p := range keyparts.MappedFiles() {
		if b := filepath.Base(p); b == stem || strings.HasPrefix(b, stem+".") {
			return p
		}
	}
	return name
}
