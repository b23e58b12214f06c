package objcache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReleaseAfterLastHolder checks that the release hook runs once the
// cache has dropped the object and every holder has let go, whichever comes
// last, exactly once, and that a surplus Release is harmless.
func TestReleaseAfterLastHolder(t *testing.T) {
	tests := []struct {
		name      string
		dropFirst bool
	}{
		{"dropped then released", true},
		{"released then dropped", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr tracker
			c := New[string, *object](Options[*object]{Release: tr.release})
			h1 := mustGet(t, c, "k", builder("k", 1))
			h2, ok := c.Get("k")
			if !ok || h2 != h1 {
				t.Fatal("holders of one entry must share its handle")
			}
			if tt.dropFirst {
				c.Remove("k")
			}
			h1.Release()
			h2.Release()
			if n := len(tr.list()); n != map[bool]int{true: 1, false: 0}[tt.dropFirst] {
				t.Fatalf("freed %v", tr.list())
			}
			h2.Release() // surplus: ignored
			c.Remove("k")
			h1.Release()
			if got := tr.list(); len(got) != 1 || h1.Value().freed.Load() != 1 {
				t.Fatalf("freed %v, want k exactly once", got)
			}
		})
	}
}

// TestHandleRefsRace hammers hits, releases, removals and rebuilds of a few
// keys from many goroutines, some entries on stripes, checking that no holder ever sees its object
// released, and that every object is released exactly once in the end.
func TestHandleRefsRace(t *testing.T) {
	const keys, workers, rounds = 4, 8, 2000
	var built atomic.Int64
	var tr tracker
	c := New[int, *object](Options[*object]{Threshold: 3, Release: tr.release})
	build := func(k int) BuildFunc[*object] {
		return func(context.Context) (*object, int64, error) {
			built.Add(1)
			return &object{name: fmt.Sprint(k)}, 1, nil
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				k := rng.IntN(keys)
				switch rng.IntN(8) {
				case 0:
					c.Remove(k)
				case 1:
					if h, ok := c.Get(k); ok {
						checkLive(t, h)
					}
				case 2:
					if e := c.idx.Load().lookup(k); e != nil {
						e.h.refs.inflate() // as contention would
					}
				default:
					h, err := c.GetOrBuild(context.Background(), k, build(k))
					if err != nil {
						t.Error(err)
						return
					}
					checkLive(t, h)
				}
			}
		})
	}
	wg.Wait()
	c.Close()
	if n := int64(len(tr.list())); n != built.Load() {
		t.Fatalf("released %d of %d objects", n, built.Load())
	}
}

func checkLive(t *testing.T, h *Handle[*object]) {
	if h.Value().freed.Load() != 0 {
		t.Error("holder sees a released object")
	}
	h.Release()
}
