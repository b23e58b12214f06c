package objcache

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestHitAllocatesNothing pins requirement 7: a hit, through GetOrBuild or
// Get, with string or struct keys, allocates nothing.
func TestHitAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	strs := New[string, *object](Options[*object]{Threshold: 1 << 20})
	structs := New[kernelKey, *object](Options[*object]{})
	build := builder("k", 1)
	skey := "kernel_main_lambda"
	kkey := kernelKey{"prog", "kernel_main_lambda"}
	mustGet(t, strs, skey, build).Release()
	mustGet(t, structs, kkey, build).Release()
	hot := New[string, *object](Options[*object]{})
	mustGet(t, hot, skey, build).Release()
	hot.idx.Load().lookup(skey).h.refs.inflate() // as contention would
	tests := []struct {
		name string
		hit  func()
	}{
		{"GetOrBuild string", func() { h, _ := strs.GetOrBuild(ctx, skey, build); h.Release() }},
		{"Get string", func() { h, _ := strs.Get(skey); h.Release() }},
		{"GetOrBuild struct", func() { h, _ := structs.GetOrBuild(ctx, kkey, build); h.Release() }},
		{"Get struct", func() { h, _ := structs.Get(kkey); h.Release() }},
		{"GetOrBuild striped", func() { h, _ := hot.GetOrBuild(ctx, skey, build); h.Release() }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(1000, tt.hit); n != 0 {
			t.Errorf("%s: %v allocations per hit, want 0", tt.name, n)
		}
	}
}

// TestGet checks that Get neither builds nor waits, and counts misses.
func TestGet(t *testing.T) {
	c := New[string, *object](Options[*object]{})
	if _, ok := c.Get("k"); ok {
		t.Fatal("hit on an empty cache")
	}
	if _, err := c.GetOrBuild(context.Background(), "bad", func(context.Context) (*object, int64, error) {
		return nil, 0, errCompile
	}); !errors.Is(err, errCompile) {
		t.Fatal(err)
	}
	if _, ok := c.Get("bad"); ok {
		t.Fatal("Get returned a failed entry")
	}
	h := mustGet(t, c, "k", builder("k", 1))
	h2, ok := c.Get("k")
	if !ok || h2.Value() != h.Value() {
		t.Fatal("Get missed a built object")
	}
	h.Release()
	h2.Release()
	if st := c.Stats(); st.Hits != 1 || st.Misses != 4 {
		t.Fatalf("stats %+v, want 1 hit and 4 misses", st)
	}
}

// TestStats checks the counters, with a clock that advances a second per
// reading, so each build lasts exactly one second.
func TestStats(t *testing.T) {
	c := New[string, *object](Options[*object]{Threshold: 2})
	var clock time.Time
	c.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	for i := range 3 {
		mustGet(t, c, fmt.Sprint(i), builder("", 1)).Release()
	}
	for i := range 5 {
		if i == 2 {
			c.idx.Load().lookup("2").h.refs.inflate() // hits on stripes count too
		}
		mustGet(t, c, "2", nil).Release()
	}
	c.GetOrBuild(context.Background(), "bad", func(context.Context) (*object, int64, error) {
		return nil, 0, errCompile
	})
	c.GetOrBuild(context.Background(), "bad", nil)
	c.Remove("2") // its hits stay counted
	want := Stats{Hits: 6, Misses: 4, Builds: 4, FailedBuilds: 1, Evictions: 1, BuildTime: 3 * time.Second}
	if got := c.Stats(); got != want {
		t.Fatalf("Stats() = %+v, want %+v", got, want)
	}
}

// TestCancelledCallerDoesNotBuild checks that a caller whose ctx is already
// done gets its error without starting a build, but still gets hits.
func TestCancelledCallerDoesNotBuild(t *testing.T) {
	c := New[string, *object](Options[*object]{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.GetOrBuild(ctx, "k", builder("k", 1)); !errors.Is(err, context.Canceled) || c.Stats().Builds != 0 {
		t.Fatalf("got %v", err)
	}
	mustGet(t, c, "k", builder("k", 1)).Release()
	h, err := c.GetOrBuild(ctx, "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
}
