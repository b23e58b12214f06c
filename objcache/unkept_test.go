package objcache

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestUnkeptResultNeverServed checks that a result the cache does not keep
// (any result with caching disabled, a Transient error) reaches only the
// callers of its build: a caller arriving as the build finishes must not
// find it on the lock-free path and take it for a cached one.
func TestUnkeptResultNeverServed(t *testing.T) {
	const rounds = 20000
	errFlaky := errors.New("driver busy")
	tests := []struct {
		name  string
		opts  Options[*object]
		build BuildFunc[*object]
	}{
		{"disabled", Options[*object]{Disabled: true}, builder("k", 1)},
		{"transient", Options[*object]{}, func(context.Context) (*object, int64, error) {
			return nil, 0, Transient(errFlaky)
		}},
		{"keeper", Options[*object]{}, func(context.Context) (*object, int64, error) {
			return &object{name: "k", unkept: true}, 1, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New[string, *object](tt.opts)
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Go(func() {
				for !stop.Load() {
					if h, ok := c.Get("k"); ok {
						h.Release()
						t.Error("Get found a result the cache does not keep")
						return
					}
					// A cached error is found by GetOrBuild only.
					if h, err := c.GetOrBuild(context.Background(), "k", tt.build); err == nil {
						h.Release()
					}
				}
			})
			for range rounds {
				if h, err := c.GetOrBuild(context.Background(), "k", tt.build); err == nil {
					h.Release()
				}
			}
			stop.Store(true)
			wg.Wait()
			if st := c.Stats(); st.Hits != 0 {
				t.Fatalf("stats %+v: a result not kept was served as a hit", st)
			}
		})
	}
}

// TestKeeperNotKept: an object that says it must not be kept reaches the
// callers that waited for its build, and is released once they let go;
// the next caller builds again. An object that says it may be kept is.
func TestKeeperNotKept(t *testing.T) {
	var tr tracker
	c := New[string, *object](Options[*object]{Release: tr.release})
	gate := make(chan struct{})
	var builds atomic.Int32
	var wg sync.WaitGroup
	handles := make(chan *Handle[*object], 2)
	for range 2 {
		wg.Go(func() {
			h, err := c.GetOrBuild(context.Background(), "k", keeperBuild(&builds, gate, false))
			if err != nil {
				t.Error(err)
				return
			}
			handles <- h
		})
	}
	for builds.Load() == 0 {
		runtime.Gosched()
	}
	for c.Stats().Misses < 2 { // the second caller waits on the build
		runtime.Gosched()
	}
	close(gate)
	wg.Wait()
	close(handles)
	var got []*Handle[*object]
	for h := range handles {
		got = append(got, h)
	}
	if len(got) != 2 || got[0].Value() != got[1].Value() || builds.Load() != 1 {
		t.Fatalf("%d handles, %d builds: the two callers did not share one build", len(got), builds.Load())
	}
	if _, ok := c.Get("k"); ok || c.Len() != 0 {
		t.Fatal("an object that must not be kept was kept")
	}
	got[0].Release()
	if len(tr.list()) != 0 {
		t.Fatal("released while a caller holds it")
	}
	got[1].Release()
	if len(tr.list()) != 1 {
		t.Fatalf("freed %v after the last caller let go, want it", tr.list())
	}
	h := mustGet(t, c, "k", keeperBuild(&builds, nil, true))
	h.Release()
	if builds.Load() != 2 {
		t.Fatalf("%d builds: the next caller did not build again", builds.Load())
	}
	if h, ok := c.Get("k"); !ok {
		t.Error("an object that may be kept was not")
	} else {
		h.Release()
	}
}

// keeperBuild builds an object whose Keep says keep, after gate closes
// (nil: at once), counting builds.
func keeperBuild(builds *atomic.Int32, gate chan struct{}, keep bool) BuildFunc[*object] {
	return func(context.Context) (*object, int64, error) {
		builds.Add(1)
		if gate != nil {
			<-gate
		}
		return &object{name: "built", unkept: !keep}, 1, nil
	}
}
