package keyparts

import (
	"bufio"
	"os"
	"slices"
	"strings"
)

// Library is a library's identity for a key: its path, size and
// modification time, which change when it is replaced in place even where
// the version string its driver reports does not.
type Library struct {
	Path  string
	Size  int64
	MTime int64 // Unix nanoseconds
}

// StatLibrary returns the identity of the file at path. Where the file
// cannot be read, it returns the path alone, with the error.
func StatLibrary(path string) (Library, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Library{Path: path}, err
	}
	return Library{Path: path, Size: fi.Size(), MTime: fi.ModTime().UnixNano()}, nil
}

// MappedFiles returns the paths of the files mapped into this process,
// each once, in the order of /proc/self/maps; nil where that file does not
// exist. They are the libraries actually loaded, which the loader's
// search path alone cannot tell.
func MappedFiles() []string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || slices.Contains(out, fields[5]) {
			continue
		}
		out = append(out, fields[5])
	}
	return out
}
