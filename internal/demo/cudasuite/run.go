package cudasuite

import (
	"fmt"

	"github.com/kcache/kcache/cuda"
)

// Run is a case's buffers on the device, ready for its launches.
type Run struct {
	c    Case
	ctx  *cuda.Context
	bufs []cuda.DevicePtr
}

// Prepare allocates c's buffers in ctx and uploads their initial contents
// (zeros where Init is nil). Free releases them.
func Prepare(ctx *cuda.Context, c Case) (*Run, error) {
	r := &Run{c: c, ctx: ctx}
	for _, b := range c.Buffers {
		if b.Size <= 0 || (b.Init != nil && len(b.Init) != b.Size) {
			r.Free()
			return nil, fmt.Errorf("cudasuite: %s: buffer %q: invalid size %d with %d initial bytes", c.Name, b.Name, b.Size, len(b.Init))
		}
		p, err := ctx.Alloc(b.Size)
		if err != nil {
			r.Free()
			return nil, fmt.Errorf("cudasuite: %s: buffer %q: %w", c.Name, b.Name, err)
		}
		r.bufs = append(r.bufs, p)
		init := b.Init
		if init == nil {
			init = make([]byte, b.Size)
		}
		if err := ctx.CopyToDevice(p, init); err != nil {
			r.Free()
			return nil, fmt.Errorf("cudasuite: %s: buffer %q: %w", c.Name, b.Name, err)
		}
	}
	return r, nil
}

// Launch runs every launch of the case on the default stream, taking each
// kernel from kernels (called once per launch), and waits for them to
// complete: the first completed launch of every kernel of the case.
func (r *Run) Launch(kernels func(name string) (*cuda.Function, error)) error {
	for i, l := range r.c.Launches {
		f, err := kernels(l.Kernel)
		if err != nil {
			return fmt.Errorf("cudasuite: %s: launch %d (%s): %w", r.c.Name, i, l.Kernel, err)
		}
		args := make([]any, len(l.Args))
		for j, a := range l.Args {
			if a.Buffer >= 0 {
				args[j] = r.bufs[a.Buffer]
			} else {
				args[j] = a.Value
			}
		}
		if err := f.Launch(nil, l.Grid, l.Block, l.Shared, args...); err != nil {
			return fmt.Errorf("cudasuite: %s: launch %d (%s): %w", r.c.Name, i, l.Kernel, err)
		}
	}
	if err := r.ctx.Synchronize(); err != nil {
		return fmt.Errorf("cudasuite: %s: %w", r.c.Name, err)
	}
	return nil
}

// Read returns the final contents of every buffer, in the order of
// Case.Buffers.
func (r *Run) Read() ([][]byte, error) {
	out := make([][]byte, len(r.bufs))
	for i, p := range r.bufs {
		out[i] = make([]byte, r.c.Buffers[i].Size)
		if err := r.ctx.CopyFromDevice(out[i], p); err != nil {
			return nil, fmt.Errorf("cudasuite: %s: read %q: %w", r.c.Name, r.c.Buffers[i].Name, err)
		}
	}
	return out, nil
}

// Free releases the buffers.
func (r *Run) Free() {
	for _, p := range r.bufs {
		r.ctx.Free(p)
	}
	r.bufs = nil
}

// Check reads the buffers back and verifies them against the reference.
func (r *Run) Check() error {
	out, err := r.Read()
	if err != nil {
		return err
	}
	if err := r.c.Verify(out); err != nil {
		return fmt.Errorf("wrong result: %w", err)
	}
	return nil
}
