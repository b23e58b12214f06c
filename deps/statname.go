//go:build linux && (amd64 || arm64 || ppc64 || ppc64le || riscv64 || s390x)

package deps

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// statNameMax bounds the names fstatat copies onto the stack: a record's
// places run to 100-200 bytes, and the buffer is zeroed on every call.
const statNameMax = 512

// fstatat is unix.Fstatat(fd, name, st, 0) without its allocation: the
// name is copied into a buffer on the stack, NUL-terminated there, where
// unix.Fstatat allocates a C string for every call, 2,500 for a record
// of a CUB-sized key and one per header on every warm key. These
// architectures' newfstatat takes the Stat_t of x/sys as it is, as
// unix.Fstatat passes it. A longer name, and one holding a NUL (which
// unix.Fstatat refuses, EINVAL, rather than stat a shorter name), are
// left to unix.Fstatat.
func fstatat(fd int, name string, st *unix.Stat_t) error {
	if len(name) >= statNameMax || strings.IndexByte(name, 0) >= 0 {
		return unix.Fstatat(fd, name, st, 0)
	}
	var buf [statNameMax]byte // zeroed: the NUL follows the copy
	copy(buf[:], name)
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(st)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
