package opencl

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// TestLocalAndScalarArgs sums blocks of 16 ints in __local memory and
// applies int and long scalars.
func TestLocalAndScalarArgs(t *testing.T) {
	e := testFixture(t)
	const n, group = 64, 16
	in := make([]int32, n)
	for i := range in {
		in[i] = int32(i)
	}
	bin, err := e.ctx.NewBufferFrom(MemReadOnly, casedata.I32Bytes(in))
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Release()
	bout, err := e.ctx.NewBuffer(MemWriteOnly, 4*n/group)
	if err != nil {
		t.Fatal(err)
	}
	defer bout.Release()
	k, err := e.prog.NewKernel("blocksum")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	runKernel(t, e.q, k, []int{n}, []int{group}, bin, bout, Local(4*group), int32(2), int64(-7))

	got := make([]byte, 4*n/group)
	if err := e.q.Read(bout, 0, got); err != nil {
		t.Fatal(err)
	}
	var want []int32
	for g := 0; g < n/group; g++ {
		var s int32
		for _, v := range in[g*group : (g+1)*group] {
			s += v
		}
		want = append(want, s*2-7)
	}
	if g := casedata.I32s(got); !slices.Equal(g, want) {
		t.Errorf("blocksum = %v, want %v", g, want)
	}
}

func TestSetArgErrors(t *testing.T) {
	e := testFixture(t)
	k, err := e.prog.NewKernel("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	tests := []struct {
		name string
		set  func() error
		code int32 // 0: any error that is not an *Error
	}{
		{"plain int", func() error { return k.SetArg(3, 1) }, 0},
		{"wrong size", func() error { return k.SetArg(3, float64(1)) }, CodeInvalidArgSize},
		{"bad index", func() error { return k.SetArg(99, float32(1)) }, CodeInvalidArgIndex},
		{"negative index", func() error { return k.SetArg(-1, float32(1)) }, CodeInvalidArgIndex},
		{"empty bytes", func() error { return k.SetArgBytes(3, nil) }, CodeInvalidArgSize},
		{"zero local", func() error { return k.SetArgLocal(0, 0) }, CodeInvalidArgSize},
	}
	for _, tt := range tests {
		err := tt.set()
		var clErr *Error
		switch {
		case err == nil:
			t.Errorf("%s: no error", tt.name)
		case tt.code == 0 && errors.As(err, &clErr):
			t.Errorf("%s: %v, want a Go-side error", tt.name, err)
		case tt.code != 0 && !errors.Is(err, &Error{Code: tt.code}):
			t.Errorf("%s: %v, want %s", tt.name, err, CodeName(tt.code))
		}
	}
}

func TestBufferRange(t *testing.T) {
	e := testFixture(t)
	b, err := e.ctx.NewBuffer(MemReadWrite, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if b.Size() != 16 {
		t.Errorf("Size() = %d", b.Size())
	}
	if err := e.q.Write(b, 8, []byte{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if err := e.q.Read(b, 10, got); err != nil || !slices.Equal(got, []byte{3, 4, 5, 6}) {
		t.Errorf("Read at 10 = %v, %v", got, err)
	}
	for _, off := range []int{-1, 13, 17} {
		if err := e.q.Read(b, off, got); !errors.Is(err, &Error{Code: CodeInvalidValue}) {
			t.Errorf("Read at %d = %v, want CL_INVALID_VALUE", off, err)
		}
	}
	for _, size := range []int{0, -1} {
		if _, err := e.ctx.NewBuffer(MemReadWrite, size); err == nil {
			t.Errorf("NewBuffer(%d) succeeded", size)
		}
	}
	if _, err := e.ctx.NewBuffer(MemCopyHostPtr, 16); err == nil {
		t.Error("NewBuffer with MemCopyHostPtr succeeded without data")
	}
}

func TestReleaseIsIdempotent(t *testing.T) {
	e := testFixture(t)
	ctx, err := NewContext(e.dev)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ctx.NewQueue(e.dev)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ctx.NewBuffer(MemReadWrite, 64)
	if err != nil {
		t.Fatal(err)
	}
	p := e.prog.Retain() // a second wrapper on the shared program
	k, err := p.NewKernel("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		k.Release()
		p.Release()
		b.Release()
		q.Release()
		ctx.Release()
	}
	var nilProg *Program
	nilProg.Release()
	(&Event{}).Release()

	if err := q.Finish(); !errors.Is(err, &Error{Code: -36}) { // CL_INVALID_COMMAND_QUEUE
		t.Errorf("Finish after Release = %v", err)
	}
	if _, err := p.NewKernel("saxpy"); err == nil {
		t.Error("NewKernel on a released wrapper succeeded")
	}
	// The shared program still holds its own reference.
	k2, err := e.prog.NewKernel("saxpy")
	if err != nil {
		t.Fatalf("shared program unusable after releasing a retained wrapper: %v", err)
	}
	k2.Release()
}

// TestConcurrentKernels runs saxpy from many goroutines, each with its own
// kernel object and buffers, sharing the context, program and queue.
func TestConcurrentKernels(t *testing.T) {
	e := testFixture(t)
	const workers, rounds = 8, 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			k, err := e.prog.NewKernel("saxpy")
			if err != nil {
				errs <- err
				return
			}
			defer k.Release()
			for r := range rounds {
				if err := runSaxpy(e.ctx, e.q, k, 256, float32(w*rounds+r)); err != nil {
					errs <- fmt.Errorf("worker %d round %d: %w", w, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSharedKernelIsMemorySafe hammers one Kernel from several goroutines:
// the results are meaningless (arguments interleave), but the lock must
// keep clSetKernelArg and enqueue from running concurrently, and -race clean.
func TestSharedKernelIsMemorySafe(t *testing.T) {
	e := testFixture(t)
	k, err := e.prog.NewKernel("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	b, err := e.ctx.NewBuffer(MemReadWrite, 4*32)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for range 10 {
				for i, a := range []any{b, b, b, float32(w), uint32(32)} {
					if err := k.SetArg(i, a); err != nil {
						t.Error(err)
						return
					}
				}
				ev, err := e.q.Run(k, []int{32}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				ev.Release()
			}
		})
	}
	wg.Wait()
	if err := e.q.Finish(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSetArg measures the per-call cost of the binding (purego's
// reflective call plus the lock) on the launch path.
func BenchmarkSetArg(b *testing.B) {
	e := testFixture(b)
	k, err := e.prog.NewKernel("saxpy")
	if err != nil {
		b.Fatal(err)
	}
	defer k.Release()
	for b.Loop() {
		if err := k.SetArg(3, float32(1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunAndWait measures a small launch end to end.
func BenchmarkRunAndWait(b *testing.B) {
	e := testFixture(b)
	k, err := e.prog.NewKernel("saxpy")
	if err != nil {
		b.Fatal(err)
	}
	defer k.Release()
	buf, err := e.ctx.NewBuffer(MemReadWrite, 4*64)
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Release()
	for i, a := range []any{buf, buf, buf, float32(1), uint32(64)} {
		if err := k.SetArg(i, a); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		ev, err := e.q.Run(k, []int{64}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := ev.Wait(); err != nil {
			b.Fatal(err)
		}
		ev.Release()
	}
}
