package opencl

import (
	"fmt"
	"unsafe"

	"github.com/kcache/kcache/internal/binread"
)

// Binaries returns the built program's binary for each of its devices, in
// Devices order; a device the program was not built for gets a nil entry.
// The result is a fresh copy owned by the caller, ready for
// ProgramWithBinary.
//
// The driver may copy more than the size it reported (PoCL, when another
// thread's query and a kernel's first launch come in between): the copy
// goes to buffers with room to spare, and is taken only if the sizes
// stayed the same (internal/binread).
func (p *Program) Binaries() ([][]byte, error) {
	f := p.infoFunc()
	sizes := func() ([]uintptr, error) {
		sizes, err := infoSlice[uintptr]("clGetProgramInfo", f, programBinarySizes)
		if err == nil && len(sizes) == 0 {
			err = fmt.Errorf("opencl: program has no devices: %w", newError(CodeInvalidProgram, "clGetProgramInfo"))
		}
		return sizes, err
	}
	copyOut := func(ptrs []unsafe.Pointer) error {
		// The pointers address mappings outside Go's heap: nothing to pin.
		code := f(programBinaries, uintptr(len(ptrs))*unsafe.Sizeof(ptrs[0]), unsafe.Pointer(&ptrs[0]), nil)
		return check(code, "clGetProgramInfo")
	}
	bins, err := binread.Read(binread.Funcs{Sizes: sizes, Copy: copyOut})
	if err != nil {
		return nil, fmt.Errorf("opencl: reading program binaries: %w", err)
	}
	return bins, nil
}
