package flight

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kcache/kcache/internal/syncbuf"
)

// awaitCallers blocks until n callers asked for key's build under way. It
// orders the test's steps; it asserts nothing about time.
func awaitCallers[K comparable, V any](g *Group[K, V], key K, n int) {
	for {
		g.mu.Lock()
		c, ok := g.calls[key]
		got := 0
		if ok {
			got = c.callers
		}
		g.mu.Unlock()
		if got >= n {
			return
		}
		runtime.Gosched()
	}
}

// TestDoSuppressesDuplicates checks that concurrent callers of one key
// share one build and all get its value.
func TestDoSuppressesDuplicates(t *testing.T) {
	const callers = 64
	var g Group[string, int]
	var builds atomic.Int32
	gate := make(chan struct{})
	build := func(context.Context) (int, error) {
		builds.Add(1)
		<-gate
		return 42, nil
	}
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			if v, err := g.Do(context.Background(), "k", build); err != nil || v != 42 {
				t.Errorf("Do = %d, %v; want 42", v, err)
			}
		})
	}
	awaitCallers(&g, "k", callers)
	close(gate)
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Fatalf("%d builds, want 1", n)
	}
}

// TestDoPanic checks that a panicking build is an error for every caller,
// carrying the panic value and the builder's stack, that it is logged, and
// that nothing is kept: the next caller builds again.
func TestDoPanic(t *testing.T) {
	errBad := errors.New("bad state")
	tests := []struct {
		name  string
		value any
		want  []error
		text  string
	}{
		{"value", "nil program", []error{ErrPanic}, "nil program"},
		{"error", errBad, []error{ErrPanic, errBad}, "bad state"},
		{"nil", nil, []error{ErrPanic}, "nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			g := Group[string, int]{Log: slog.New(slog.NewTextHandler(&logs, nil))}
			gate := make(chan struct{})
			panicky := func(context.Context) (int, error) {
				<-gate
				panicInBuilder(tt.value)
				return 0, nil
			}
			const callers = 8
			errs := make(chan error, callers)
			go func() { _, err := g.Do(context.Background(), "k", panicky); errs <- err }()
			awaitCallers(&g, "k", 1)
			for range callers - 1 {
				go func() { _, err := g.Do(context.Background(), "k", panicky); errs <- err }()
			}
			awaitCallers(&g, "k", callers)
			close(gate)
			for range callers {
				err := <-errs
				for _, w := range tt.want {
					if !errors.Is(err, w) {
						t.Fatalf("err = %v, want errors.Is %v", err, w)
					}
				}
				if !strings.Contains(err.Error(), tt.text) || !strings.Contains(err.Error(), "panicInBuilder") {
					t.Fatalf("err lacks the value or the builder's stack: %v", err)
				}
			}
			if l := logs.String(); !strings.Contains(l, "build panicked") || !strings.Contains(l, "panicInBuilder") {
				t.Fatalf("panic not logged with its stack: %s", l)
			}
			if v, err := g.Do(context.Background(), "k", func(context.Context) (int, error) { return 1, nil }); v != 1 || err != nil {
				t.Fatalf("after a panic: %d, %v; want a fresh build", v, err)
			}
		})
	}
}

//go:noinline
func panicInBuilder(v any) { panic(v) }

// TestDoGoexit checks that a build calling runtime.Goexit ends as an error
// for every caller instead of leaving them waiting.
func TestDoGoexit(t *testing.T) {
	var logs syncbuf.Buffer
	g := Group[string, int]{Log: slog.New(slog.NewTextHandler(&logs, nil))}
	gate := make(chan struct{})
	build := func(context.Context) (int, error) {
		<-gate
		runtime.Goexit()
		return 0, nil
	}
	errs := make(chan error, 2)
	go func() { _, err := g.Do(context.Background(), "k", build); errs <- err }()
	awaitCallers(&g, "k", 1)
	go func() { _, err := g.Do(context.Background(), "k", build); errs <- err }()
	awaitCallers(&g, "k", 2)
	close(gate)
	for range 2 {
		if err := <-errs; !errors.Is(err, ErrGoexit) {
			t.Fatalf("err = %v, want ErrGoexit", err)
		}
	}
	if !strings.Contains(logs.String(), "Goexit") {
		t.Fatalf("Goexit not logged: %s", logs.String())
	}
	if v, err := g.Do(context.Background(), "k", func(context.Context) (int, error) { return 1, nil }); v != 1 || err != nil {
		t.Fatalf("after Goexit: %d, %v", v, err)
	}
}

// TestDoWaiterLeaves checks that a caller whose ctx ends returns at once
// while the build goes on, uncancelled, for the caller still waiting.
func TestDoWaiterLeaves(t *testing.T) {
	type ctxKey struct{}
	var g Group[string, string]
	gate := make(chan struct{})
	var sawErr, sawValue atomic.Value
	build := func(ctx context.Context) (string, error) {
		<-gate
		sawErr.Store(fmt.Sprint(ctx.Err()))
		sawValue.Store(fmt.Sprint(ctx.Value(ctxKey{})))
		return "built", nil
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "starter's"))
	left := make(chan error)
	go func() { _, err := g.Do(ctx, "k", build); left <- err }()
	awaitCallers(&g, "k", 1)
	stayed := make(chan string)
	go func() { v, _ := g.Do(context.Background(), "k", build); stayed <- v }()
	awaitCallers(&g, "k", 2)
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("leaving caller got %v", err)
	}
	close(gate) // the build was still blocked: the caller left at once
	if v := <-stayed; v != "built" {
		t.Fatalf("remaining caller got %q", v)
	}
	if sawErr.Load() != "<nil>" || sawValue.Load() != "starter's" {
		t.Fatalf("build's ctx: err %v, value %v; want uncancelled, with the starter's values", sawErr.Load(), sawValue.Load())
	}
}

// TestDoEndedContext checks that a caller whose ctx has already ended
// starts nothing.
func TestDoEndedContext(t *testing.T) {
	var g Group[string, int]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.Do(ctx, "k", func(context.Context) (int, error) {
		t.Error("build started for a caller that had left")
		return 0, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// TestGoReturned checks that Result tells a build's own error apart from a
// panic or Goexit, even when the error wraps ErrPanic.
func TestGoReturned(t *testing.T) {
	nested := fmt.Errorf("inner build: %w", ErrPanic)
	tests := []struct {
		name     string
		fn       Func[int]
		returned bool
		want     error
	}{
		{"value", func(context.Context) (int, error) { return 1, nil }, true, nil},
		{"error wrapping ErrPanic", func(context.Context) (int, error) { return 0, nested }, true, nested},
		{"panic", func(context.Context) (int, error) { panic("x") }, false, ErrPanic},
		{"goexit", func(context.Context) (int, error) { runtime.Goexit(); return 0, nil }, false, ErrGoexit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			got := make(chan Result[int], 2)
			Go(context.Background(), nil, tt.fn, func(r Result[int]) { calls.Add(1); got <- r })
			r := <-got
			if r.Returned != tt.returned || !errors.Is(r.Err, tt.want) || (tt.want == nil) != (r.Err == nil) {
				t.Fatalf("Result %+v, want returned %v, err %v", r, tt.returned, tt.want)
			}
			if calls.Load() != 1 {
				t.Fatalf("done ran %d times", calls.Load())
			}
		})
	}
}

// TestDoStress runs many callers over few keys with builds that return,
// fail, panic or call Goexit, some callers leaving early, under -race:
// every caller returns, with the build's outcome or its own ctx's error.
func TestDoStress(t *testing.T) {
	var g Group[int, int]
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			ctx := context.Background()
			if i%5 == 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				go cancel()
			}
			v, err := g.Do(ctx, i%7, func(context.Context) (int, error) {
				runtime.Gosched()
				switch i % 4 {
				case 1:
					return 0, errors.New("compile error")
				case 2:
					panic("boom")
				case 3:
					runtime.Goexit()
				}
				return i%7 + 1, nil
			})
			switch {
			case err == nil && v != i%7+1:
				t.Errorf("key %d got %d", i%7, v)
			case err != nil && v != 0:
				t.Errorf("error %v with value %d", err, v)
			}
		})
	}
	wg.Wait()
	// Builds that every caller left go on; each leaves the group as it
	// ends, whichever way it ends.
	for {
		g.mu.Lock()
		n := len(g.calls)
		g.mu.Unlock()
		if n == 0 {
			return
		}
		runtime.Gosched()
	}
}
