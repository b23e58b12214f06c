package opencl

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// newCacheWith returns a program cache on the shared fixture's context
// over a fresh disk tier, with cfg adjusted by set.
func newCacheWith(t *testing.T, opts CacheOptions, set func(*kcache.Config)) (*Cache, *disk.Store) {
	t.Helper()
	f := testFixture(t)
	st, err := disk.Open(disk.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := kcache.DefaultConfig(func(string) string { return "" })
	if set != nil {
		set(&cfg)
	}
	bins := kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	if opts.Environ == nil {
		opts.Environ = []string{}
	}
	c := NewCache(f.ctx, bins, opts)
	t.Cleanup(c.Close)
	return c, st
}

func valueSource(v int) Source {
	return Source{Code: []byte("__kernel void k(__global int* o) { o[0] = VALUE; }"), Options: fmt.Sprintf("-DVALUE=%d", v)}
}

// TestReleaseTwiceKeepsOtherHolders: a second Release by one holder must
// not give back another holder's reference. The program is evicted from
// the object tier while both hold it, so only their references keep it.
func TestReleaseTwiceKeepsOtherHolders(t *testing.T) {
	f := testFixture(t)
	// Room for one program built from source (its size is its source's).
	limit := int64(len(valueSource(1).Code)) + 8
	c, _ := newCacheWith(t, CacheOptions{CommitDelay: -1}, func(cfg *kcache.Config) { cfg.InMemoryThreshold = limit })
	ctx := context.Background()
	a, err := c.Program(ctx, f.dev, valueSource(1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Program(ctx, f.dev, valueSource(1))
	if err != nil {
		t.Fatal(err)
	}
	if b.Outcome != kcache.OutcomeMemory {
		t.Fatalf("second holder: outcome %v, want memory", b.Outcome)
	}
	k, err := b.Kernel("k")
	if err != nil {
		t.Fatal(err)
	}
	prog, kern := b.Program(), k.Raw()
	other, err := c.Program(ctx, f.dev, valueSource(2)) // evicts the first
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	for range 3 {
		a.Release()
	}
	if prog.Handle() == 0 || kern.Handle() == 0 {
		t.Fatal("a repeated Release released the program while another holder uses it")
	}
	b.Release()
	b.Release()
	if prog.Handle() != 0 || kern.Handle() != 0 {
		t.Errorf("program (%#x) or kernel (%#x) not released after every holder let go", prog.Handle(), kern.Handle())
	}
}

// TestFailedKernelLeavesWithProgram: a failed Kernel lookup is kept only
// as long as its program lives. Kernels are keyed by the program's handle,
// which the runtime hands out again once the program is released: a new
// program under the old handle must not get the old program's error.
func TestFailedKernelLeavesWithProgram(t *testing.T) {
	f := testFixture(t)
	// With the object tier off, a program is released as soon as its
	// holder lets go, which is what lets the runtime reuse its handle.
	c, _ := newCacheWith(t, CacheOptions{CommitDelay: -1}, func(cfg *kcache.Config) { cfg.InMemory = false })
	ctx := context.Background()
	withNope := Source{Code: []byte("__kernel void nope(__global int* o) { o[0] = 7; }")}
	blob := func() []byte {
		p, err := c.Program(ctx, f.dev, withNope)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		b, err := p.Blob(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}()

	reused := false
	for range 20 {
		p, err := c.Program(ctx, f.dev, valueSource(1))
		if err != nil {
			t.Fatal(err)
		}
		old := p.Program().Handle()
		for range 2 { // the second call is answered from the kept error
			if _, err := p.Kernel("nope"); err == nil {
				t.Fatal("Kernel(nope) of a program without it succeeded")
			}
		}
		p.Release()
		if c.kernels.Forget(kernelKey{program: old, name: "nope"}) {
			t.Fatal("the failed kernel outlived its program")
		}
		q, err := c.ProgramFromBlob(ctx, f.dev, withNope, blob)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Kernel("nope"); err != nil {
			t.Fatalf("kernel of a valid program (handle reused: %v): %v", q.Program().Handle() == old, err)
		}
		reused = reused || q.Program().Handle() == old
		q.Release()
		if reused {
			break
		}
	}
	if !reused {
		t.Log("the runtime never reused a program handle; only the removal was checked")
	}
}

// TestTinyCommitDelay arms the delayed commit with a delay that expires
// before fromSource returns: under -race, any unguarded access to the
// timer shows. The binaries must still be stored.
func TestTinyCommitDelay(t *testing.T) {
	f := testFixture(t)
	c, st := newCacheWith(t, CacheOptions{CommitDelay: time.Nanosecond}, nil)
	ctx := context.Background()
	for v := range 3 {
		p, err := c.Program(ctx, f.dev, valueSource(v))
		if err != nil {
			t.Fatal(err)
		}
		key, err := c.Key(f.dev, valueSource(v))
		if err != nil {
			t.Fatal(err)
		}
		// Commit waits for a commit the timer has started, or commits.
		p.Commit(ctx)
		if _, err := st.Get(ctx, key); err != nil {
			t.Fatalf("program %d not stored: %v", v, err)
		}
		p.Release()
	}
}
