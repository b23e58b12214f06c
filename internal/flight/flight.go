// Package flight runs a build once for any number of callers that want its
// result, in the spirit of golang.org/x/sync/singleflight, with what a cache
// of builds needs on top:
//
//   - the build runs on a goroutine of its own, under a context that keeps
//     the first caller's values but not its cancellation, so a caller that
//     leaves or returns does not stop it;
//   - a caller whose context ends stops waiting at once, while the build
//     goes on for the others;
//   - a build that panics or calls runtime.Goexit ends as an error for every
//     caller: it never crashes the process, and never leaves callers waiting.
//
// Go is the mechanism; Group keys it for callers that keep no index of their
// own. objcache, whose index is also its table of builds, uses Go directly.
//
// It knows no key, no tier and no backend: a build is a function and its
// result a value. It imports no package of the module.
package flight

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// ErrPanic is wrapped by the error of a build that panicked. The error also
// carries the panic value (wrapped, if it is an error) and the stack of the
// goroutine that panicked.
var ErrPanic = errors.New("build panicked")

// ErrGoexit is the error of a build that called runtime.Goexit (as
// t.FailNow does): recover cannot stop it, but callers must not hang.
var ErrGoexit = errors.New("build called runtime.Goexit")

// Func is a build: it returns a value or an error.
type Func[V any] func(ctx context.Context) (V, error)

// Result is how a build ended.
type Result[V any] struct {
	Val V
	Err error
	// Returned is false when the build panicked or called runtime.Goexit;
	// Err then wraps ErrPanic or ErrGoexit. A build that returned an error
	// wrapping either (one of its own builds panicked) has Returned set.
	Returned bool
}

// Go runs fn(ctx) on a goroutine of its own (one kept from an earlier
// build where one is idle: workers.go), then done with how it ended, on
// that goroutine, exactly once whatever fn does: return, panic or call
// runtime.Goexit. A panic or Goexit is logged at error level to log, with
// the stack for a panic; log may be nil to discard it. done must not panic
// or call runtime.Goexit itself.
func Go[V any](ctx context.Context, log *slog.Logger, fn Func[V], done func(Result[V])) {
	spawn(func() { run(ctx, log, fn, done) })
}

// Run is Go on the caller's goroutine: it runs fn(ctx), then done with how
// it ended, exactly once, with Go's protection against a panic. Where fn
// calls runtime.Goexit, done runs and the caller's goroutine then exits,
// as Goexit asks. It is for work short enough that starting and waking a
// goroutine for it would cost more than the work, and that the caller may
// wait for whatever its context says.
func Run[V any](ctx context.Context, log *slog.Logger, fn Func[V], done func(Result[V])) {
	run(ctx, log, fn, done)
}

// run is Go's goroutine. The two nested defers tell a panic from Goexit as
// x/sync/singleflight does: the inner one recovers a panic, after which
// the function returns normally; under Goexit, recover returns nil and only
// the deferred calls run, so the outer one sees neither a return nor a
// recovered panic.
func run[V any](ctx context.Context, log *slog.Logger, fn Func[V], done func(Result[V])) {
	var r Result[V]
	defer func() {
		if !r.Returned && r.Err == nil {
			r.Err = ErrGoexit
			if log != nil {
				log.Error("kcache: build called runtime.Goexit")
			}
		}
		done(r)
	}()
	func() {
		defer func() {
			if r.Returned {
				return
			}
			if p := recover(); p != nil {
				stack := debug.Stack()
				r.Err = panicError(p, stack)
				if log != nil {
					log.Error("kcache: build panicked", "panic", p, "stack", string(stack))
				}
			}
		}()
		r.Val, r.Err = fn(ctx)
		r.Returned = true
	}()
}

// panicError turns a recovered panic value into an error that carries it
// and the stack it was raised on.
func panicError(p any, stack []byte) error {
	if err, ok := p.(error); ok {
		return fmt.Errorf("%w: %w\n\n%s", ErrPanic, err, stack)
	}
	return fmt.Errorf("%w: %v\n\n%s", ErrPanic, p, stack)
}

// Group runs at most one build per key at a time: a caller that finds a
// build of its key under way waits for that build's result instead of
// starting another. Nothing is kept once a build ends, a failure least of
// all: the next caller for the key builds again. The zero Group is ready to
// use; a Group must not be copied after first use.
type Group[K comparable, V any] struct {
	// Log receives the builds' panics and Goexits; nil discards them. Set
	// it before the first Do.
	Log *slog.Logger

	mu    sync.Mutex
	calls map[K]*call[V] // builds under way; protected by mu
}

// call is one build under way and, once done is closed, its result.
type call[V any] struct {
	done    chan struct{}
	res     Result[V] // set before done is closed
	callers int       // callers that asked for it; protected by Group.mu
}

// Do returns the result of fn for key, running fn only if no build of key
// is under way, else waiting for that build. fn runs on a goroutine of its
// own (see Go), under a context that keeps the values of the ctx of the
// caller that started it but not its cancellation: the build is never
// cancelled, since what it makes may be worth keeping though no one waits.
// If ctx ends first, Do returns ctx.Err() at once and the build goes on;
// if it has already ended, Do returns ctx.Err() and starts nothing.
// A build that panicked or called runtime.Goexit is an error wrapping
// ErrPanic or ErrGoexit for every caller that waited on it.
func (g *Group[K, V]) Do(ctx context.Context, key K, fn Func[V]) (V, error) {
	if err := ctx.Err(); err != nil {
		var zero V
		return zero, err
	}
	c := g.join(ctx, key, fn)
	select {
	case <-c.done:
		return c.res.Val, c.res.Err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// join returns key's build under way, starting it if there is none.
func (g *Group[K, V]) join(ctx context.Context, key K, fn Func[V]) *call[V] {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.calls[key]; ok {
		c.callers++
		return c
	}
	if g.calls == nil {
		g.calls = map[K]*call[V]{}
	}
	c := &call[V]{done: make(chan struct{}), callers: 1}
	g.calls[key] = c
	Go(context.WithoutCancel(ctx), g.Log, fn, func(r Result[V]) {
		c.res = r
		g.mu.Lock()
		delete(g.calls, key)
		g.mu.Unlock()
		close(c.done)
	})
	return c
}
