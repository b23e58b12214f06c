package objcache

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kcache/kcache/internal/flight"
)

var errCompile = errors.New("compile error: undeclared identifier")

// TestSingleFlight checks that 64 concurrent callers of a missing key share
// one build and all get its object.
func TestSingleFlight(t *testing.T) {
	const callers = 64
	var tr tracker
	c := New[string, *object](Options[*object]{Release: tr.release})
	var builds atomic.Int32
	gate := make(chan struct{})
	build := func(context.Context) (*object, int64, error) {
		builds.Add(1)
		<-gate
		return &object{name: "p"}, 100, nil
	}
	var wg sync.WaitGroup
	got := make([]*object, callers)
	for i := range callers {
		wg.Go(func() {
			h, err := c.GetOrBuild(context.Background(), "p", build)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = h.Value()
			h.Release()
		})
	}
	awaitWaiters(c, "p", callers)
	close(gate)
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Fatalf("builds = %d, want 1", n)
	}
	for i, o := range got {
		if o != got[0] || o.freed.Load() != 0 {
			t.Fatalf("caller %d got %p (freed %d), want shared live %p", i, o, o.freed.Load(), got[0])
		}
	}
	st := c.Stats()
	if st.Builds != 1 || st.Misses != callers || st.Hits != 0 || c.Len() != 1 || c.Size() != 100 {
		t.Fatalf("stats %+v, Len %d, Size %d", st, c.Len(), c.Size())
	}
}

// TestBuildErrorShared checks that a build error reaches every waiter, is
// kept for later callers without rebuilding, and that Forget drops it.
func TestBuildErrorShared(t *testing.T) {
	const callers = 16
	c := New[string, *object](Options[*object]{})
	var builds atomic.Int32
	gate := make(chan struct{})
	failing := func(context.Context) (*object, int64, error) {
		builds.Add(1)
		<-gate
		return nil, 0, errCompile
	}
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			if _, err := c.GetOrBuild(context.Background(), "k", failing); !errors.Is(err, errCompile) {
				t.Errorf("waiter got %v, want %v", err, errCompile)
			}
		})
	}
	awaitWaiters(c, "k", callers)
	close(gate)
	wg.Wait()
	if _, err := c.GetOrBuild(context.Background(), "k", failing); !errors.Is(err, errCompile) {
		t.Fatalf("later caller got %v, want the cached %v", err, errCompile)
	}
	if n := builds.Load(); n != 1 {
		t.Fatalf("builds = %d, want 1: the error must be cached", n)
	}
	if c.Forget("other") || !c.Forget("k") {
		t.Fatal("Forget must report a cached error, and only that")
	}
	h := mustGet(t, c, "k", builder("k", 1))
	h.Release()
	if c.Forget("k") {
		t.Fatal("Forget dropped a built object")
	}
	if st := c.Stats(); st.FailedBuilds != 1 || st.Builds != 2 || st.Hits != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSpuriousErrorsRetried checks the spec's "spurious error" rule: a
// failure that says nothing about the key reaches the callers of that build
// but is not kept; the next caller builds again.
func TestSpuriousErrorsRetried(t *testing.T) {
	errFlaky := errors.New("driver busy")
	tests := []struct {
		name  string
		build BuildFunc[*object]
		want  []error // errors.Is targets of the first caller's error
	}{
		{"transient", func(context.Context) (*object, int64, error) {
			return nil, 0, Transient(errFlaky)
		}, []error{errFlaky}},
		{"panic value", func(context.Context) (*object, int64, error) {
			panic("nil program")
		}, []error{ErrBuildPanic}},
		{"panic error", func(context.Context) (*object, int64, error) {
			panic(errFlaky)
		}, []error{ErrBuildPanic, errFlaky}},
		{"goexit", func(context.Context) (*object, int64, error) {
			runtime.Goexit()
			return nil, 0, nil
		}, []error{flight.ErrGoexit}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New[string, *object](Options[*object]{})
			_, err := c.GetOrBuild(context.Background(), "k", tt.build)
			for _, want := range tt.want {
				if !errors.Is(err, want) {
					t.Fatalf("first call: %v, want errors.Is %v", err, want)
				}
			}
			h := mustGet(t, c, "k", builder("k", 1))
			defer h.Release()
			if st := c.Stats(); st.Builds != 2 || st.FailedBuilds != 1 {
				t.Fatalf("stats %+v, want the failure forgotten and a second build", st)
			}
		})
	}
}

// TestWaiterCancel checks that a caller whose ctx ends returns at once,
// whether it started the build or joined it, while the build goes on for
// the remaining waiter and its result is cached.
func TestWaiterCancel(t *testing.T) {
	for _, starter := range []bool{true, false} {
		name := map[bool]string{true: "starter leaves", false: "joiner leaves"}[starter]
		t.Run(name, func(t *testing.T) {
			c := New[string, *object](Options[*object]{})
			gate := make(chan struct{})
			var ctxErr error // the build's ctx.Err() as it returns
			build := func(ctx context.Context) (*object, int64, error) {
				<-gate
				ctxErr = ctx.Err()
				return &object{name: "k"}, 1, nil
			}
			leaving, cancel := context.WithCancel(context.Background())
			first, second := context.Background(), leaving
			if starter {
				first, second = leaving, context.Background()
			}
			left := make(chan error)
			stayed := make(chan error)
			go func() { _, err := c.GetOrBuild(first, "k", build); goResult(first, left, stayed, err) }()
			awaitWaiters(c, "k", 1)
			go func() { _, err := c.GetOrBuild(second, "k", build); goResult(second, left, stayed, err) }()
			awaitWaiters(c, "k", 2)
			cancel()
			if err := <-left; !errors.Is(err, context.Canceled) {
				t.Fatalf("leaving caller got %v, want context.Canceled", err)
			}
			// The build is still blocked on gate: the caller left at once.
			close(gate)
			if err := <-stayed; err != nil {
				t.Fatalf("remaining caller: %v", err)
			}
			if ctxErr != nil {
				t.Fatal("build's context cancelled while a caller still waited")
			}
			if h, ok := c.Get("k"); !ok {
				t.Fatal("result not cached")
			} else {
				h.Release()
			}
		})
	}
}

// goResult routes a caller's error to left if its ctx is the cancelled one.
func goResult(ctx context.Context, left, stayed chan<- error, err error) {
	if ctx != context.Background() {
		left <- err
		return
	}
	stayed <- err
}

// TestAbandonedBuild checks that once every waiter has left, the build's
// context is cancelled and, if the build fails for it, the entry is
// cleared; and that a caller arriving meanwhile builds afresh rather than
// inherit that failure.
func TestAbandonedBuild(t *testing.T) {
	var tr tracker
	c := New[string, *object](Options[*object]{Release: tr.release})
	sawCancel := make(chan struct{})
	finish := make(chan struct{})
	build := func(ctx context.Context) (*object, int64, error) {
		<-ctx.Done()
		close(sawCancel)
		<-finish
		return nil, 0, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := c.GetOrBuild(ctx, "k", build); done <- err }()
	awaitWaiters(c, "k", 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	<-sawCancel
	// The old build is still running; a new caller must not wait on it.
	h := mustGet(t, c, "k", builder("fresh", 1))
	if h.Value().name != "fresh" {
		t.Fatalf("got %q, want a fresh build", h.Value().name)
	}
	h.Release()
	close(finish)
	if st := c.Stats(); st.Builds != 2 {
		t.Fatalf("stats %+v, want 2 builds", st)
	}
}

// TestAbandonedBuildCleared checks that an abandoned build that fails for
// its cancellation leaves no entry behind.
func TestAbandonedBuildCleared(t *testing.T) {
	c := New[string, *object](Options[*object]{})
	returned := make(chan struct{})
	build := func(ctx context.Context) (*object, int64, error) {
		defer close(returned)
		<-ctx.Done()
		return nil, 0, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Cancelled once the build runs: cancelled before GetOrBuild, the
	// call would start no build, and returned would never close.
	go func() {
		awaitWaiters(c, "k", 1)
		cancel()
	}()
	if _, err := c.GetOrBuild(ctx, "k", build); err == nil {
		t.Fatal("want an error")
	}
	<-returned
	for inIndex(c, "k") { // finish runs just after the builder returns
		runtime.Gosched()
	}
	h := mustGet(t, c, "k", builder("k", 1))
	h.Release()
}

// TestDisabled checks that with caching off every call builds, concurrent
// callers still share a build, and objects are released once let go.
func TestDisabled(t *testing.T) {
	var tr tracker
	c := New[string, *object](Options[*object]{Disabled: true, Release: tr.release})
	h1 := mustGet(t, c, "k", builder("a", 1))
	h2 := mustGet(t, c, "k", builder("b", 1))
	if h1 == h2 || c.Len() != 0 {
		t.Fatal("disabled cache kept an object")
	}
	h1.Release()
	h2.Release()
	if got := tr.list(); len(got) != 2 {
		t.Fatalf("freed %v, want both", got)
	}
	if _, err := c.GetOrBuild(context.Background(), "e", func(context.Context) (*object, int64, error) {
		return nil, 0, errCompile
	}); !errors.Is(err, errCompile) {
		t.Fatal(err)
	}
	h := mustGet(t, c, "e", builder("e", 1))
	h.Release()

	// Concurrent callers still share one build.
	gate := make(chan struct{})
	var builds atomic.Int32
	shared := func(context.Context) (*object, int64, error) {
		builds.Add(1)
		<-gate
		return &object{name: "s"}, 1, nil
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if h, err := c.GetOrBuild(context.Background(), "s", shared); err != nil {
				t.Error(err)
			} else {
				h.Release()
			}
		})
	}
	awaitWaiters(c, "s", 2)
	close(gate)
	wg.Wait()
	if builds.Load() != 1 || c.Len() != 0 || !slices.Contains(tr.list(), "s") {
		t.Fatalf("%d builds, Len %d, freed %v: want one shared build, released", builds.Load(), c.Len(), tr.list())
	}
}
