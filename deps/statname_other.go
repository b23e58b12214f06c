//go:build !linux || !(amd64 || arm64 || ppc64 || ppc64le || riscv64 || s390x)

package deps

import "golang.org/x/sys/unix"

// nameBuf is the size of dirStats' name buffer, which only the
// architectures of statname.go use.
const nameBuf = 0

// fstatat is unix.Fstatat(fd, base, st, 0): where newfstatat is not the
// system call of x/sys's Stat_t (32-bit systems' fstatat64, or a wrapper
// that converts), x/sys's own call is the one to trust.
func (d *dirStats) fstatat(fd int, base string, st *unix.Stat_t) error {
	return unix.Fstatat(fd, base, st, 0)
}
