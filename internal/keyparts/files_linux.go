package keyparts

import (
	"fmt"
	"syscall"
)

// statReal returns the identity of the file at real, a path without links.
func statReal(real string) (FileID, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(real, &st); err != nil {
		return FileID{Path: real}, fmt.Errorf("stat %s: %w", real, err)
	}
	return FileID{Path: real, Size: st.Size, MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano(), Inode: st.Ino}, nil
}

// devIno returns the device and inode numbers of the file at path,
// following links, as /proc/self/maps shows them for a mapped file.
func devIno(path string) (dev, ino uint64, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return st.Dev, st.Ino, nil
}
