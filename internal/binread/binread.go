// Package binread reads a program's binaries through OpenCL's two-call
// protocol (CL_PROGRAM_BINARY_SIZES, then CL_PROGRAM_BINARIES) safely when
// the binaries may grow between the calls.
//
// CL_PROGRAM_BINARIES hands the driver bare pointers, one a device, and
// the driver copies each binary at its size at the time of the copy. PoCL
// adds a kernel's work-group functions to its program's binary when the
// kernel first runs, on whatever thread runs it, so a launch between the
// two calls makes it write past buffers of the size it reported first:
// memory corruption in the caller. Here each buffer is an anonymous
// mapping far larger than the reported size, whose pages cost nothing
// until written, and a read counts only if the sizes reported after it are
// the sizes reported before: binaries only grow, so equal sizes mean each
// copy was exactly that long.
//
// It knows no key and no cache: the caller hands it the two calls as
// functions. It imports no package of the module.
package binread

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Funcs are the two driver queries, for one program.
type Funcs struct {
	// Sizes returns each device's binary size (CL_PROGRAM_BINARY_SIZES).
	Sizes func() ([]uintptr, error)
	// Copy has the driver write each device's binary through ptrs
	// (CL_PROGRAM_BINARIES); a nil pointer asks for no binary.
	Copy func(ptrs []unsafe.Pointer) error
}

// ErrUnstable reports that the binaries kept growing while they were read.
var ErrUnstable = errors.New("binread: the program's binaries changed while they were read")

// attempts bounds the reads when the binaries grow during them: each
// growth is a kernel's first launch, which happens once per kernel and
// shape.
const attempts = 4

// Read returns each device's binary, a fresh copy owned by the caller; a
// device without one gets nil.
func Read(f Funcs) ([][]byte, error) {
	for range attempts {
		bins, err := readOnce(f)
		if !errors.Is(err, ErrUnstable) {
			return bins, err
		}
	}
	return nil, ErrUnstable
}

func readOnce(f Funcs) ([][]byte, error) {
	sizes, err := f.Sizes()
	if err != nil {
		return nil, err
	}
	maps := make([][]byte, len(sizes))
	defer func() {
		for _, m := range maps {
			if m != nil {
				unix.Munmap(m)
			}
		}
	}()
	ptrs := make([]unsafe.Pointer, len(sizes))
	for i, n := range sizes {
		if n == 0 {
			continue
		}
		if maps[i], err = unix.Mmap(-1, 0, mapSize(n), unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE); err != nil {
			return nil, fmt.Errorf("binread: mapping %d bytes: %w", mapSize(n), err)
		}
		ptrs[i] = unsafe.Pointer(&maps[i][0])
	}
	if err := f.Copy(ptrs); err != nil {
		return nil, err
	}
	after, err := f.Sizes()
	if err != nil {
		return nil, err
	}
	if !slices.Equal(sizes, after) {
		return nil, ErrUnstable
	}
	bins := make([][]byte, len(sizes))
	for i, n := range sizes {
		if n > 0 {
			bins[i] = slices.Clone(maps[i][:n])
		}
	}
	return bins, nil
}

// mapSize is how much address space a binary of n bytes gets: room for it
// to grow by many work-group functions (tens of KB each) during the copy.
func mapSize(n uintptr) int {
	return int(max(4*n, n+64<<20))
}
