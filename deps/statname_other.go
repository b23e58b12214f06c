//go:build !linux || !(amd64 || arm64 || ppc64 || ppc64le || riscv64 || s390x)

package deps

import "golang.org/x/sys/unix"

// fstatat is unix.Fstatat(fd, name, st, 0): where newfstatat is not the
// system call of x/sys's Stat_t (32-bit systems' fstatat64, or a wrapper
// that converts), x/sys's own call is the one to trust.
func fstatat(fd int, name string, st *unix.Stat_t) error {
	return unix.Fstatat(fd, name, st, 0)
}
