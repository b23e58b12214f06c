package opencl

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Binaries returns the built program's binary for each of its devices, in
// Devices order; a device the program was not built for gets a nil entry.
// The result is a fresh copy owned by the caller, ready for
// ProgramWithBinary.
//
// CL_PROGRAM_BINARIES takes an array of pointers that the driver writes
// through. The buffers are allocated in Go and pinned with runtime.Pinner
// for the call, so the array of Go pointers is legal to hand to C and no C
// allocator (malloc through purego) is needed.
func (p *Program) Binaries() ([][]byte, error) {
	f := p.infoFunc()
	sizes, err := infoSlice[uintptr]("clGetProgramInfo", f, programBinarySizes)
	if err != nil {
		return nil, err
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("opencl: program has no devices: %w", newError(CodeInvalidProgram, "clGetProgramInfo"))
	}
	bins := make([][]byte, len(sizes))
	for i, n := range sizes {
		if n > 0 {
			bins[i] = make([]byte, n)
		}
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := pinnedPointers(&pin, bins)
	code := f(programBinaries, uintptr(len(ptrs))*unsafe.Sizeof(ptrs[0]), unsafe.Pointer(&ptrs[0]), nil)
	if err := check(code, "clGetProgramInfo"); err != nil {
		return nil, err
	}
	return bins, nil
}
