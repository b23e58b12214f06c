package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z int }

// Dim returns a Dim3 with unset dimensions set to 1: Dim(256) is 256x1x1.
func Dim(xyz ...int) Dim3 {
	d := Dim3{1, 1, 1}
	for i, v := range xyz {
		switch i {
		case 0:
			d.X = v
		case 1:
			d.Y = v
		case 2:
			d.Z = v
		}
	}
	return d
}

// Launch enqueues f on s (nil: the default stream) over grid blocks of
// block threads, with shared bytes of dynamic shared memory. Each argument
// is a DevicePtr, an int32, uint32, int64, uint64, float32 or float64, or
// a []byte holding a parameter's bytes as the kernel declares it.
func (f *Function) Launch(s *Stream, grid, block Dim3, shared int, args ...any) error {
	slab, offs, err := packArgs(args)
	if err != nil {
		return fmt.Errorf("cuda: launch %s: %w", f.name, err)
	}
	params := make([]unsafe.Pointer, max(len(args), 1))
	var pin runtime.Pinner
	defer pin.Unpin()
	if len(slab) > 0 {
		pin.Pin(&slab[0])
		for i, off := range offs {
			params[i] = unsafe.Pointer(&slab[off])
		}
	}
	pin.Pin(&params[0]) // its elements are Go pointers the driver reads
	return f.ctx.call("cuLaunchKernel", func() Result {
		return cuLaunchKernel(f.h, uint32(grid.X), uint32(grid.Y), uint32(grid.Z),
			uint32(block.X), uint32(block.Y), uint32(block.Z), uint32(shared), s.handle(), &params[0], nil)
	})
}

// packArgs lays the arguments out in one buffer, each at an offset aligned
// to 8 bytes, and returns the offsets: the driver copies each parameter's
// bytes from the address it is given.
func packArgs(args []any) ([]byte, []int, error) {
	var slab []byte
	offs := make([]int, len(args))
	for i, a := range args {
		for len(slab)%8 != 0 {
			slab = append(slab, 0)
		}
		offs[i] = len(slab)
		switch v := a.(type) {
		case DevicePtr:
			slab = binary.LittleEndian.AppendUint64(slab, uint64(v))
		case int32:
			slab = binary.LittleEndian.AppendUint32(slab, uint32(v))
		case uint32:
			slab = binary.LittleEndian.AppendUint32(slab, v)
		case int64:
			slab = binary.LittleEndian.AppendUint64(slab, uint64(v))
		case uint64:
			slab = binary.LittleEndian.AppendUint64(slab, v)
		case float32:
			slab = binary.LittleEndian.AppendUint32(slab, math.Float32bits(v))
		case float64:
			slab = binary.LittleEndian.AppendUint64(slab, math.Float64bits(v))
		case []byte:
			if len(v) == 0 {
				return nil, nil, fmt.Errorf("argument %d: empty []byte", i)
			}
			slab = append(slab, v...)
		default:
			return nil, nil, fmt.Errorf("argument %d: unsupported type %T", i, a)
		}
	}
	return slab, offs, nil
}
