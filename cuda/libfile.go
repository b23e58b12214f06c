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
	base := filepath.Base(name)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		p := fields[5]
		if b := filepath.Base(p); b == base || strings.HasPrefix(b, base+".") {
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
