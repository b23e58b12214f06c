//go:build linux && (amd64 || arm64 || ppc64 || ppc64le || riscv64 || s390x)

package deps

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nameBuf is the size of dirStats' name buffer: a file name's limit
// (NAME_MAX, 255) and its NUL. A longer last component is no name the
// kernel would find; unix.Fstatat answers it.
const nameBuf = 256

// fstatat is unix.Fstatat(fd, base, st, 0) without its allocation: the
// name is copied into d's buffer and NUL-terminated there, where
// unix.Fstatat allocates a C string for every call, 2,500 for a record
// of a CUB-sized key. These architectures' newfstatat takes the Stat_t
// of x/sys as it is, as unix.Fstatat passes it. A name holding a NUL is
// left to unix.Fstatat, which refuses it (EINVAL) rather than stat a
// shorter name.
func (d *dirStats) fstatat(fd int, base string, st *unix.Stat_t) error {
	if len(base) >= len(d.name) || strings.IndexByte(base, 0) >= 0 {
		return unix.Fstatat(fd, base, st, 0)
	}
	copy(d.name[:], base)
	d.name[len(base)] = 0
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(fd), uintptr(unsafe.Pointer(&d.name[0])), uintptr(unsafe.Pointer(st)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
