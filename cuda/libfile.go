package cuda

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// mappedPath returns the file that the library dlopened as name is mapped
// from, found in /proc/self/maps; name itself where it cannot be found. A
// soname resolves through the loader's search path, and the key wants the
// file actually in use.
func mappedPath(name string) string {
	if filepath.IsAbs(name) {
		if p, err := filepath.EvalSymlinks(name); err == nil {
			return p
		}
		return name
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return name
	}
	defer f.Close()
	// The file behind a soname carries a longer version: libcuda.so.1 is
	// libcuda.so.580.95.05, libnvrtc.so.13 is libnvrtc.so.13.0.88.
	stem := filepath.Base(name)
	if i := strings.Index(stem, ".so"); i >= 0 {
		stem = stem[:i+3]
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		p := fields[5]
		if b := filepath.Base(p); b == stem || strings.HasPrefix(b, stem+".") {
			return p
		}
	}
	return name
}

// libraryFile is a library's identity for a key: its path, size and
// modification time, which change when it is replaced in place even where
// its version string does not.
type libraryFile struct {
	Path  string
	Size  int64
	MTime int64 // Unix nanoseconds
}

func fileIdentity(path string) libraryFile {
	id := libraryFile{Path: path}
	if fi, err := os.Stat(path); err == nil {
		id.Size, id.MTime = fi.Size(), fi.ModTime().UnixNano()
	}
	return id
}
