//go:build !linux

package keyparts

import (
	"errors"
	"os"
)

// statReal returns the identity of the file at real, a path without links:
// size and modification time only, where the change time and inode are
// not read portably.
func statReal(real string) (FileID, error) {
	fi, err := os.Stat(real)
	if err != nil {
		return FileID{Path: real}, err
	}
	return FileID{Path: real, Size: fi.Size(), MTime: fi.ModTime().UnixNano()}, nil
}

// devIno is unknown off Linux, where there is no /proc/self/maps to match.
func devIno(string) (dev, ino uint64, err error) {
	return 0, 0, errors.New("keyparts: device and inode numbers are read on Linux only")
}
