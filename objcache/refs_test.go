package objcache

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestRefsDropRace has workers take and give back references while the
// entry is dropped under them, with central counters, with stripes, and
// switching to stripes midway. The object must be freed exactly once, and
// never while a worker holds it.
func TestRefsDropRace(t *testing.T) {
	tests := []struct {
		name       string
		striped    bool // stripes from the start
		inflateMid bool // stripes from the middle of the run
	}{
		{"central", false, false},
		{"striped", true, false},
		{"inflated midway", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 20 {
				refsDropRace(t, tt.striped, tt.inflateMid)
			}
		})
	}
}

func refsDropRace(t *testing.T, striped, inflateMid bool) {
	var r refs
	if striped {
		r.inflate()
	}
	var holding atomic.Int64
	var frees atomic.Int32
	free := func() {
		if holding.Load() != 0 {
			t.Error("freed while held")
		}
		frees.Add(1)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				if w == 0 && i == 100 {
					if inflateMid {
						r.inflate()
					}
					if _, f := r.drop(); f {
						free()
					}
				}
				ok, f := r.acquire()
				if f {
					free()
				}
				if !ok {
					return
				}
				holding.Add(1)
				holding.Add(-1)
				if r.release() {
					free()
				}
			}
		})
	}
	wg.Wait()
	if n := frees.Load(); n != 1 {
		t.Fatalf("freed %d times, want 1", n)
	}
}

// TestRefsInflate checks that lost races make an entry spread its counters
// over stripes, and that references taken before and after add up.
func TestRefsInflate(t *testing.T) {
	var r refs
	r.acquire()
	r.contended.Store(inflateAfter - 1)
	if ok, _ := r.acquireContended(); !ok || r.stripes.Load() == nil {
		t.Fatal("no stripes after inflateAfter lost races")
	}
	r.acquire()
	if n := r.taken(); n != 3 {
		t.Fatalf("taken %d, want 3", n)
	}
	for range 2 {
		if r.release() {
			t.Fatal("free before drop")
		}
	}
	if _, free := r.drop(); free {
		t.Fatal("free while one reference is held")
	}
	if !r.release() {
		t.Fatal("last release after drop did not free")
	}
	if r.release() {
		t.Fatal("surplus release freed twice")
	}
}
