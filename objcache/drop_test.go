package objcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// kernelKey is the spec's kernels-map key: the program the kernel belongs
// to, and the kernel's name.
type kernelKey struct {
	prog string
	name string
}

// syclContext is a context's object tier: programs, and kernels that hold their
// program and leave with it.
type syclContext struct {
	tr       tracker
	programs *Cache[string, *object]
	kernels  *Cache[kernelKey, *kernel]
}

type kernel struct {
	object
	prog *Handle[*object] // the kernel keeps its program alive
}

var errProgramGone = errors.New("program evicted while its kernel was built")

func newSyclContext(threshold int64) *syclContext {
	r := &syclContext{}
	r.programs = New[string, *object](Options[*object]{Threshold: threshold, Release: r.tr.release})
	r.kernels = New[kernelKey, *kernel](Options[*kernel]{Release: func(k *kernel) {
		r.tr.release(&k.object)
		k.prog.Release()
	}})
	return r
}

// kernel gets a kernel the way the SYCL runtime does: program first, then
// the kernel from it, registered as the program's dependent.
func (r *syclContext) kernel(t *testing.T, prog, name string) *Handle[*kernel] {
	t.Helper()
	key := kernelKey{prog, name}
	return mustGet(t, r.kernels, key, func(ctx context.Context) (*kernel, int64, error) {
		ph, err := r.programs.GetOrBuild(ctx, prog, builder(prog, 10))
		if err != nil {
			return nil, 0, fmt.Errorf("program %s: %w", prog, err)
		}
		if !r.programs.AddDependent(prog, func() { r.kernels.Remove(key) }) {
			ph.Release()
			return nil, 0, Transient(errProgramGone)
		}
		return &kernel{object: object{name: prog + "." + name}, prog: ph}, 1, nil
	})
}

// TestDependents checks that evicting or removing a program drops its
// kernels from the other cache, kernels released before their program, and
// that a program is released only after its kernels let go of it.
func TestDependents(t *testing.T) {
	r := newSyclContext(20) // room for two programs
	r.kernel(t, "p1", "a").Release()
	r.kernel(t, "p1", "b").Release()
	r.kernel(t, "p2", "a").Release()
	held := r.kernel(t, "p2", "b")
	if r.kernels.Len() != 4 || r.programs.Len() != 2 {
		t.Fatalf("kernels %d programs %d", r.kernels.Len(), r.programs.Len())
	}

	mustGet(t, r.programs, "p3", builder("p3", 10)).Release() // evicts p1
	if got := r.tr.list(); !slices.Equal(got, []string{"p1.a", "p1.b", "p1"}) {
		t.Fatalf("freed %v, want p1's kernels, then p1", got)
	}
	if _, ok := r.kernels.Get(kernelKey{"p1", "a"}); ok {
		t.Fatal("p1's kernel outlived p1's eviction")
	}

	r.programs.Remove("p2")
	if got := r.tr.list()[3:]; !slices.Equal(got, []string{"p2.a"}) {
		t.Fatalf("freed %v, want p2.a only: p2.b is held, and holds p2", got)
	}
	held.Release()
	if got := r.tr.list()[4:]; !slices.Equal(got, []string{"p2.b", "p2"}) {
		t.Fatalf("freed %v, want p2.b then p2", got)
	}

	r.kernel(t, "p3", "a").Release()
	r.programs.Close()
	if r.kernels.Len() != 0 || len(r.tr.list()) != 8 {
		t.Fatalf("after Close: %d kernels, freed %v", r.kernels.Len(), r.tr.list())
	}
	if r.programs.AddDependent("p3", func() {}) {
		t.Fatal("AddDependent on a closed cache")
	}
}

// TestRemove checks Remove on a built entry, a missing key, and a build
// under way, whose waiters still get the result, released once they let go.
func TestRemove(t *testing.T) {
	var tr tracker
	c := New[string, *object](Options[*object]{Release: tr.release})
	mustGet(t, c, "a", builder("a", 1)).Release()
	if !c.Remove("a") || c.Remove("a") || c.Len() != 0 || c.Size() != 0 {
		t.Fatal("Remove of a built entry")
	}
	gate := make(chan struct{})
	got := make(chan *Handle[*object])
	go func() {
		h, err := c.GetOrBuild(context.Background(), "b", func(context.Context) (*object, int64, error) {
			<-gate
			return &object{name: "b"}, 1, nil
		})
		if err != nil {
			t.Error(err)
		}
		got <- h
	}()
	awaitWaiters(c, "b", 1)
	if !c.Remove("b") {
		t.Fatal("Remove of a build under way")
	}
	close(gate)
	h := <-got
	if h == nil || h.Value().name != "b" || c.Len() != 0 {
		t.Fatal("removed build's result lost, or kept")
	}
	h.Release()
	if !slices.Equal(tr.list(), []string{"a", "b"}) {
		t.Fatalf("freed %v", tr.list())
	}
}

// TestClose checks that Close drops everything, cancels builds under way
// (their waiters get ErrClosed), leaves held objects valid until released,
// and makes later calls fail.
func TestClose(t *testing.T) {
	var tr tracker
	c := New[string, *object](Options[*object]{Release: tr.release})
	held := mustGet(t, c, "held", builder("held", 1))
	mustGet(t, c, "idle", builder("idle", 1)).Release()
	errc := make(chan error)
	go func() {
		_, err := c.GetOrBuild(context.Background(), "slow", func(ctx context.Context) (*object, int64, error) {
			<-ctx.Done()
			return nil, 0, ctx.Err()
		})
		errc <- err
	}()
	awaitWaiters(c, "slow", 1)
	c.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) || !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter got %v, want ErrClosed wrapping context.Canceled", err)
	}
	if !slices.Equal(tr.list(), []string{"idle"}) || held.Value().freed.Load() != 0 {
		t.Fatalf("freed %v", tr.list())
	}
	held.Release()
	if len(tr.list()) != 2 {
		t.Fatalf("freed %v", tr.list())
	}
	if _, err := c.GetOrBuild(context.Background(), "x", builder("x", 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("GetOrBuild after Close: %v", err)
	}
	if _, ok := c.Get("held"); ok || c.Len() != 0 || c.Size() != 0 {
		t.Fatal("Close left entries")
	}
	c.Close()
}
