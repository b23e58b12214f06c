package keyparts

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// The driver search reads a dozen small files and lists a few
// directories in a new process, on the way to its first key. An os.File
// of a regular file costs, besides open, read and close, five system
// calls of registering it with the runtime's poller (which refuses it):
// a third of the calls such a read makes, and each is slow in a virtual
// machine. These read with the descriptor alone.

// readFile returns the content of the file at path, as os.ReadFile does.
func readFile(path string) ([]byte, error) {
	fd, err := openRaw(path, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	b, err := io.ReadAll(fdStream(fd))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// dirNames returns the names in the directory dir, "." and ".." left
// out, in the order the file system gives them.
func dirNames(dir string) ([]string, error) {
	fd, err := openRaw(dir, syscall.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var names []string
	buf := make([]byte, 8<<10)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
}

// globFiles returns the paths of dir's entries whose names match pattern
// (filepath.Match), sorted, as filepath.Glob(dir/pattern) does for a dir
// without pattern characters; none where dir cannot be listed.
func globFiles(dir, pattern string) []string {
	names, err := dirNames(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		if ok, _ := filepath.Match(pattern, n); ok {
			out = append(out, filepath.Join(dir, n))
		}
	}
	slices.Sort(out)
	return out
}

// glob is filepath.Glob, listing with globFiles where only the last
// element of pattern holds pattern characters (the common case).
func glob(pattern string) []string {
	dir, file := filepath.Split(pattern)
	dir = filepath.Clean(dir)
	if hasMeta(dir) {
		m, _ := filepath.Glob(pattern)
		return m
	}
	if !hasMeta(file) {
		if _, err := os.Lstat(pattern); err != nil {
			return nil
		}
		return []string{pattern}
	}
	return globFiles(dir, file)
}

// hasMeta reports whether s holds a character filepath.Match treats
// specially.
func hasMeta(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}

// openRaw opens path for reading (with flags added), retrying an
// interrupted open; its error is an *fs.PathError.
func openRaw(path string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|flags, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// fdStream reads a descriptor from where it is.
type fdStream int

func (fd fdStream) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 && len(b) > 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}
