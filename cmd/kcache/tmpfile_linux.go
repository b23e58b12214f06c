package main

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// createUnnamed opens a file without a name in dir (O_TMPFILE), so that a
// process killed while it writes, by SIGKILL or a machine's end, leaves
// nothing behind; publish names it. Where the file system has no such
// files, or /proc cannot name their descriptors for the link, it returns
// an error and the caller writes a named temporary file instead.
func createUnnamed(dir string) (*os.File, error) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open O_TMPFILE", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, "(unnamed)")), nil
}

// publish gives the unnamed file f the name file: it is linked under a
// temporary name beside it, then renamed over it, so that a bundle already
// there is replaced at once. Only a kill between the two leaves the
// temporary name.
func publish(f *os.File, file string) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return err
	}
	tmp.Close()
	// linkat does not replace: the name is reserved, then freed for it.
	if err := os.Remove(tmp.Name()); err != nil {
		return err
	}
	proc := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, tmp.Name(), unix.AT_SYMLINK_FOLLOW); err != nil {
		return &os.LinkError{Op: "link", Old: proc, New: tmp.Name(), Err: err}
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
