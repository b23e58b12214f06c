package suite

import (
	"fmt"
	"os"

	"github.com/kcache/kcache/opencl"
)

// Execute runs c on q: it creates c's buffers in ctx, writes their initial
// contents (zeros where Init is nil), sets the arguments of and enqueues
// every launch in order, waits, and returns the final contents of every
// buffer, in the order of c.Buffers. kernels supplies the kernel object for
// a name and is called once per launch, so it should return the same
// object for repeated names; the kernels belong to the caller, who may
// cache them (Execute sets all their arguments before each launch and does
// not release them). A kernel must not be used concurrently by another
// Execute, since arguments are kernel state.
// The buffers are released before Execute returns.
func Execute(ctx *opencl.Context, q *opencl.Queue, kernels func(name string) (*opencl.Kernel, error), c Case) ([][]byte, error) {
	bufs := make([]*opencl.Buffer, 0, len(c.Buffers))
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	for _, desc := range c.Buffers {
		b, err := newBuffer(ctx, q, desc)
		if err != nil {
			return nil, fmt.Errorf("suite: %s: buffer %q: %w", c.Name, desc.Name, err)
		}
		bufs = append(bufs, b)
	}
	for i, l := range c.Launches {
		if err := launch(q, kernels, bufs, l); err != nil {
			return nil, fmt.Errorf("suite: %s: launch %d (%s): %w", c.Name, i, l.Kernel, err)
		}
	}
	if err := q.Finish(); err != nil {
		return nil, fmt.Errorf("suite: %s: finish: %w", c.Name, err)
	}
	out := make([][]byte, len(bufs))
	for i, b := range bufs {
		out[i] = make([]byte, c.Buffers[i].Size)
		if err := q.Read(b, 0, out[i]); err != nil {
			return nil, fmt.Errorf("suite: %s: read %q: %w", c.Name, c.Buffers[i].Name, err)
		}
	}
	return out, nil
}

// newBuffer allocates one buffer and fills it. Zero-filling nil-Init
// buffers makes outputs that kernels accumulate into (histograms) and
// outputs only partly written (compaction) deterministic.
func newBuffer(ctx *opencl.Context, q *opencl.Queue, desc Buffer) (*opencl.Buffer, error) {
	if desc.Size <= 0 || (desc.Init != nil && len(desc.Init) != desc.Size) {
		return nil, fmt.Errorf("invalid size %d with %d initial bytes", desc.Size, len(desc.Init))
	}
	b, err := ctx.NewBuffer(opencl.MemReadWrite, desc.Size)
	if err != nil {
		return nil, err
	}
	init := desc.Init
	if init == nil {
		init = make([]byte, desc.Size)
	}
	if err := q.Write(b, 0, init); err != nil {
		b.Release()
		return nil, err
	}
	return b, nil
}

// launch sets l's arguments on its kernel and enqueues it.
func launch(q *opencl.Queue, kernels func(string) (*opencl.Kernel, error), bufs []*opencl.Buffer, l Launch) error {
	k, err := kernels(l.Kernel)
	if err != nil {
		return err
	}
	for i, a := range l.Args {
		if err := setArg(k, i, a, bufs); err != nil {
			return fmt.Errorf("arg %d: %w", i, err)
		}
	}
	ev, err := q.Run(k, l.Global, l.Local)
	if err != nil {
		return err
	}
	ev.Release() // the in-order queue and the final Finish order everything
	return nil
}

// setArg sets one argument, insisting that exactly one kind is given.
func setArg(k *opencl.Kernel, i int, a Arg, bufs []*opencl.Buffer) error {
	kinds := 0
	if a.Buffer >= 0 {
		kinds++
	}
	if a.Scalar != nil {
		kinds++
	}
	if a.Local > 0 {
		kinds++
	}
	switch {
	case kinds != 1:
		return fmt.Errorf("%+v: need exactly one of Buffer, Scalar, Local", a)
	case a.Buffer >= 0:
		if a.Buffer >= len(bufs) {
			return fmt.Errorf("buffer index %d out of range", a.Buffer)
		}
		return k.SetArgBuffer(i, bufs[a.Buffer])
	case a.Scalar != nil:
		return k.SetArgBytes(i, a.Scalar)
	default:
		return k.SetArgLocal(i, a.Local)
	}
}

// RunUncached builds c from source for dev in a fresh context, runs it
// with Execute and checks the result. Headers are written to a temporary
// directory passed with -I.
func RunUncached(dev opencl.Device, c Case) (err error) {
	ctx, err := opencl.NewContext(dev)
	if err != nil {
		return err
	}
	defer ctx.Release()
	q, err := ctx.NewQueue(dev)
	if err != nil {
		return err
	}
	defer q.Release()
	prog, err := BuildProgram(ctx, dev, c)
	if err != nil {
		return err
	}
	defer prog.Release()

	get, release := ProgramKernels(prog)
	defer release()
	out, err := Execute(ctx, q, get, c)
	if err != nil {
		return err
	}
	return c.Verify(out)
}

// ProgramKernels returns a kernel lookup for Execute that makes each of
// prog's kernels once, on first use, and a function that releases them.
// It is for one goroutine: Execute sets arguments on the kernels it gets.
func ProgramKernels(prog *opencl.Program) (get func(name string) (*opencl.Kernel, error), release func()) {
	kernels := map[string]*opencl.Kernel{}
	get = func(name string) (*opencl.Kernel, error) {
		if k, ok := kernels[name]; ok {
			return k, nil
		}
		k, err := prog.NewKernel(name)
		if err != nil {
			return nil, err
		}
		kernels[name] = k
		return k, nil
	}
	release = func() {
		for _, k := range kernels {
			k.Release()
		}
	}
	return get, release
}

// BuildProgram builds c's source for dev without any cache, writing its
// headers to a temporary directory (removed afterwards) for -I.
func BuildProgram(ctx *opencl.Context, dev opencl.Device, c Case) (*opencl.Program, error) {
	dir := ""
	if len(c.Headers) > 0 {
		d, err := os.MkdirTemp("", "kcache-suite-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		if err := c.WriteHeaders(d); err != nil {
			return nil, err
		}
		dir = d
	}
	prog, err := ctx.ProgramWithSource(c.Source)
	if err != nil {
		return nil, err
	}
	if err := prog.Build([]opencl.Device{dev}, c.BuildOptions(dir)); err != nil {
		prog.Release()
		return nil, fmt.Errorf("suite: %s: build: %w", c.Name, err)
	}
	return prog, nil
}
