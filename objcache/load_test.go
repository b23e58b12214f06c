package objcache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kcache/kcache/internal/flight"
)

// loader returns a load func that makes an object named name, or fails
// when ok is false, counting its runs.
func loader(name string, ok bool, runs *atomic.Int32) LoadFunc[*object] {
	return func(context.Context) (*object, int64, bool) {
		runs.Add(1)
		if !ok {
			return nil, 0, false
		}
		return &object{name: name}, 10, true
	}
}

// TestGetOrLoadLoads: a load that succeeds is the result, no build runs,
// and the object is kept and released like a built one.
func TestGetOrLoadLoads(t *testing.T) {
	var tr tracker
	c := New[string, *object](Options[*object]{Release: tr.release})
	var loads, builds atomic.Int32
	build := func(context.Context) (*object, int64, error) { builds.Add(1); return &object{name: "built"}, 10, nil }
	h, err := c.GetOrLoad(context.Background(), "k", loader("loaded", true, &loads), build)
	if err != nil || h.Value().name != "loaded" {
		t.Fatalf("GetOrLoad: %v, %v", h, err)
	}
	h.Release()
	h2, err := c.GetOrLoad(context.Background(), "k", loader("again", true, &loads), build)
	if err != nil || h2.Value().name != "loaded" {
		t.Fatalf("second GetOrLoad: %v, %v", h2, err)
	}
	h2.Release()
	if loads.Load() != 1 || builds.Load() != 0 {
		t.Errorf("loads %d, builds %d; want 1, 0", loads.Load(), builds.Load())
	}
	if st := c.Stats(); st.Builds != 1 || st.Hits != 1 || st.Misses != 1 || c.Len() != 1 || c.Size() != 10 {
		t.Errorf("stats %+v, Len %d, Size %d", st, c.Len(), c.Size())
	}
	c.Close()
	if got := tr.list(); len(got) != 1 || got[0] != "loaded" {
		t.Errorf("freed %v, want [loaded]", got)
	}
}

// TestGetOrLoadBuildsAfterFailedLoad: a load that fails hands over to the
// build, which runs once.
func TestGetOrLoadBuildsAfterFailedLoad(t *testing.T) {
	c := New[string, *object](Options[*object]{})
	var loads atomic.Int32
	h, err := c.GetOrLoad(context.Background(), "k", loader("", false, &loads), builder("built", 1))
	if err != nil || h.Value().name != "built" {
		t.Fatalf("GetOrLoad: %v, %v", h, err)
	}
	h.Release()
	if st := c.Stats(); loads.Load() != 1 || st.Builds != 1 || st.FailedBuilds != 0 {
		t.Errorf("loads %d, stats %+v", loads.Load(), st)
	}
}

// TestGetOrLoadWaitersShareTheLoad: callers that come while the load runs
// wait for it, as for a build, and share its object; none loads or
// builds again.
func TestGetOrLoadWaitersShareTheLoad(t *testing.T) {
	for _, ok := range []bool{true, false} {
		t.Run(fmt.Sprint("load ok ", ok), func(t *testing.T) {
			const callers = 32
			c := New[string, *object](Options[*object]{})
			var loads, builds atomic.Int32
			gate := make(chan struct{})
			load := func(context.Context) (*object, int64, bool) {
				loads.Add(1)
				<-gate
				return &object{name: "loaded"}, 1, ok
			}
			build := func(context.Context) (*object, int64, error) { builds.Add(1); return &object{name: "built"}, 1, nil }
			var wg sync.WaitGroup
			got := make([]*object, callers)
			for i := range callers {
				wg.Go(func() {
					h, err := c.GetOrLoad(context.Background(), "k", load, build)
					if err != nil {
						t.Error(err)
						return
					}
					got[i] = h.Value()
					h.Release()
				})
			}
			awaitWaiters(c, "k", callers)
			close(gate)
			wg.Wait()
			for i, o := range got {
				if o == nil || o != got[0] {
					t.Fatalf("caller %d got %v, want the shared %v", i, o, got[0])
				}
			}
			want := int32(0)
			if !ok {
				want = 1
			}
			if loads.Load() != 1 || builds.Load() != want {
				t.Errorf("loads %d, builds %d; want 1, %d", loads.Load(), builds.Load(), want)
			}
		})
	}
}

// TestGetOrLoadPanic: a load that panics fails its callers with
// ErrBuildPanic, is not kept, and the next call loads again.
func TestGetOrLoadPanic(t *testing.T) {
	c := New[string, *object](Options[*object]{})
	var loads atomic.Int32
	_, err := c.GetOrLoad(context.Background(), "k", func(context.Context) (*object, int64, bool) {
		panic("load blew up")
	}, builder("built", 1))
	if !errors.Is(err, ErrBuildPanic) || !errors.Is(err, flight.ErrPanic) {
		t.Fatalf("err %v, want ErrBuildPanic", err)
	}
	h, err := c.GetOrLoad(context.Background(), "k", loader("loaded", true, &loads), builder("built", 1))
	if err != nil || h.Value().name != "loaded" {
		t.Fatalf("after the panic: %v, %v", h, err)
	}
	h.Release()
	if st := c.Stats(); st.Builds != 2 || st.FailedBuilds != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestGetOrLoadGoexit: a load that calls runtime.Goexit ends its caller's
// goroutine (as Goexit asks) and fails the callers waiting on it; the key
// is not kept.
func TestGetOrLoadGoexit(t *testing.T) {
	c := New[string, *object](Options[*object]{})
	gate := make(chan struct{})
	load := func(context.Context) (*object, int64, bool) {
		<-gate
		runtime.Goexit()
		return nil, 0, false
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		c.GetOrLoad(context.Background(), "k", load, builder("built", 1))
		t.Error("GetOrLoad returned after its load called Goexit")
	}()
	awaitWaiters(c, "k", 1)
	waiter := make(chan error, 1)
	go func() {
		_, err := c.GetOrBuild(context.Background(), "k", builder("other", 1))
		waiter <- err
	}()
	awaitWaiters(c, "k", 2)
	close(gate)
	<-exited
	if err := <-waiter; !errors.Is(err, flight.ErrGoexit) {
		t.Fatalf("waiter's err %v, want ErrGoexit", err)
	}
	if inIndex(c, "k") {
		t.Error("a load that called Goexit was kept")
	}
}

// TestGetOrLoadCancelledLoadBuildsForOthers: a caller whose ctx ends
// during a load that fails returns ctx.Err(), and the build goes on for
// the caller still waiting; with no one waiting, no build starts.
func TestGetOrLoadCancelledLoadBuildsForOthers(t *testing.T) {
	for _, others := range []bool{true, false} {
		t.Run(fmt.Sprint("others ", others), func(t *testing.T) {
			c := New[string, *object](Options[*object]{})
			ctx, cancel := context.WithCancel(context.Background())
			gate := make(chan struct{})
			load := func(ctx context.Context) (*object, int64, bool) {
				<-gate
				return nil, 0, false
			}
			var builds atomic.Int32
			build := func(ctx context.Context) (*object, int64, error) {
				builds.Add(1)
				return &object{name: "built"}, 1, ctx.Err()
			}
			first := make(chan error, 1)
			go func() {
				_, err := c.GetOrLoad(ctx, "k", load, build)
				first <- err
			}()
			awaitWaiters(c, "k", 1)
			other := make(chan *Handle[*object], 1)
			if others {
				go func() {
					h, err := c.GetOrBuild(context.Background(), "k", builder("unused", 1))
					if err != nil {
						t.Error(err)
					}
					other <- h
				}()
				awaitWaiters(c, "k", 2)
			}
			cancel()
			close(gate)
			if err := <-first; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled caller: %v, want context.Canceled", err)
			}
			if others {
				h := <-other
				if h == nil || h.Value().name != "built" {
					t.Fatalf("waiter got %v", h)
				}
				h.Release()
			}
			if want := map[bool]int32{true: 1, false: 0}[others]; builds.Load() != want {
				t.Errorf("builds %d, want %d", builds.Load(), want)
			}
			if !others && inIndex(c, "k") {
				t.Error("an abandoned load left its entry in the index")
			}
		})
	}
}

// TestGetOrLoadClosedDuringLoad: a load that fails after Close starts no
// build; its caller gets ErrClosed. One that succeeds hands its object to
// its caller, and it is released once the caller lets go.
func TestGetOrLoadClosedDuringLoad(t *testing.T) {
	for _, ok := range []bool{true, false} {
		t.Run(fmt.Sprint("load ok ", ok), func(t *testing.T) {
			var tr tracker
			c := New[string, *object](Options[*object]{Release: tr.release})
			gate := make(chan struct{})
			load := func(context.Context) (*object, int64, bool) {
				<-gate
				return &object{name: "loaded"}, 1, ok
			}
			var builds atomic.Int32
			build := func(context.Context) (*object, int64, error) { builds.Add(1); return &object{name: "built"}, 1, nil }
			type res struct {
				h   *Handle[*object]
				err error
			}
			done := make(chan res, 1)
			go func() {
				h, err := c.GetOrLoad(context.Background(), "k", load, build)
				done <- res{h, err}
			}()
			awaitWaiters(c, "k", 1)
			c.Close()
			close(gate)
			r := <-done
			switch {
			case ok && (r.err != nil || r.h.Value().name != "loaded"):
				t.Fatalf("got %v, %v; want the loaded object", r.h, r.err)
			case ok:
				if len(tr.list()) != 0 {
					t.Fatal("released while held")
				}
				r.h.Release()
				if got := tr.list(); len(got) != 1 {
					t.Errorf("freed %v after the last release", got)
				}
			case !errors.Is(r.err, ErrClosed):
				t.Fatalf("err %v, want ErrClosed", r.err)
			}
			if builds.Load() != 0 {
				t.Errorf("a build started after Close")
			}
		})
	}
}

// TestGetOrLoadStress: many goroutines over a few keys of a small cache,
// loads failing at random, eviction and a disabled cache: every caller
// gets its key's object, and every object is released once.
func TestGetOrLoadStress(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		t.Run(fmt.Sprint("disabled ", disabled), func(t *testing.T) {
			var tr tracker
			c := New[int, *object](Options[*object]{Release: tr.release, Threshold: 3, Disabled: disabled})
			var made atomic.Int32
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					for i := range 200 {
						k := (g + i) % 5
						name := fmt.Sprint(k)
						load := func(context.Context) (*object, int64, bool) {
							if (g+i)%3 == 0 {
								return nil, 0, false
							}
							made.Add(1)
							return &object{name: name}, 1, true
						}
						build := func(context.Context) (*object, int64, error) {
							made.Add(1)
							return &object{name: name}, 1, nil
						}
						h, err := c.GetOrLoad(context.Background(), k, load, build)
						if err != nil {
							t.Error(err)
							return
						}
						if h.Value().name != name || h.Value().freed.Load() != 0 {
							t.Errorf("key %d got %s (freed %d)", k, h.Value().name, h.Value().freed.Load())
						}
						h.Release()
					}
				})
			}
			wg.Wait()
			c.Close()
			if got := len(tr.list()); got != int(made.Load()) {
				t.Errorf("freed %d of %d objects", got, made.Load())
			}
		})
	}
}
