package objcache

import (
	"context"
	"errors"
	"fmt"

	"github.com/kcache/kcache/internal/flight"
)

// built is what a successful build made.
type built[V any] struct {
	val  V
	size int64
	// unkept: the builder said not to keep val (Keeper).
	unkept bool
}

// outcome is what one build produced.
type outcome[V any] struct {
	val  V
	size int64
	err  error
	// spurious: the error says nothing about the key (the spec's "spurious
	// error"), so it must not be cached: the next caller builds again.
	spurious bool
	// unkept: a success the builder said not to keep (Keeper): handed to
	// the build's waiters, then released.
	unkept bool
}

// getOrBuildSlow is GetOrBuild past a fast-path miss: join or start the
// key's build under the lock, then wait for it without the lock.
func (c *Cache[K, V]) getOrBuildSlow(ctx context.Context, key K, build BuildFunc[V]) (*Handle[V], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e, h, _, err := c.join(ctx, key, build, false)
	if e == nil {
		return h, err
	}
	return c.wait(ctx, e)
}

// wait waits for e's result as one of its waiters, or leaves when ctx
// ends first.
func (c *Cache[K, V]) wait(ctx context.Context, e *entry[K, V]) (*Handle[V], error) {
	select {
	case <-e.done:
	case <-ctx.Done():
		c.leave(e)
		return nil, ctx.Err()
	}
	if e.err != nil {
		return nil, e.err
	}
	return &e.h, nil
}

// join finds key's entry under the lock. It returns the result at once for
// a finished entry, or the entry to wait on, starting its build if needed;
// with loading set, a new entry's build is not launched, and loads says
// the caller must load it or launch its build (load.go).
func (c *Cache[K, V]) join(ctx context.Context, key K, build BuildFunc[V], loading bool) (e *entry[K, V], h *Handle[V], loads bool, err error) {
	var t cleanup[V]
	c.mu.Lock()
	defer func() {
		c.mu.Unlock()
		t.run()
	}()
	if c.closed {
		return nil, nil, false, ErrClosed
	}
	e = c.idx.Load().lookup(key)
	if e != nil {
		switch e.state.Load() {
		case stateReady:
			e.h.acquire() // cannot fail: entries in the index are not dropped
			c.hit(e)
			return nil, &e.h, false, nil
		case stateFailed:
			c.errorHit(e)
			return nil, nil, false, e.err
		}
		if !e.abandoned {
			e.waiters++
			c.misses.Add(1)
			return e, nil, false, nil
		}
		// Its build was cancelled when its last waiter left and will likely
		// fail for that reason alone: build afresh instead of waiting.
		c.detach(e, &t)
	}
	c.misses.Add(1)
	if loading {
		return c.insertBuilding(key), nil, true, nil
	}
	return c.start(ctx, key, build), nil, false, nil
}

// start inserts a building entry for key and runs its build on a goroutine
// of its own (see flight.Go), so that no caller's cancellation or return
// stops it, and no panic or runtime.Goexit in the builder crashes the
// process or leaves the waiters hanging. c.mu is held.
func (c *Cache[K, V]) start(ctx context.Context, key K, build BuildFunc[V]) *entry[K, V] {
	e := c.insertBuilding(key)
	c.launch(ctx, e, build)
	return e
}

// insertBuilding inserts a building entry for key, with its first waiter
// counted. c.mu is held.
func (c *Cache[K, V]) insertBuilding(key K) *entry[K, V] {
	e := &entry[K, V]{key: key, done: make(chan struct{}), waiters: 1}
	e.h.hook = c.release
	c.idx.Store(c.idx.Load().with(key, e))
	return e
}

// launch runs e's build on a goroutine of its own. Its context keeps ctx's
// values but not its cancellation. c.mu is held.
func (c *Cache[K, V]) launch(ctx context.Context, e *entry[K, V], build BuildFunc[V]) {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	flight.Go(bctx, c.log, func(ctx context.Context) (built[V], error) {
		return c.run(ctx, build)
	}, func(r flight.Result[built[V]]) {
		c.finish(e, c.judge(bctx, r))
		cancel() // frees the context's resources
	})
}

// leave takes a waiter whose ctx ended off e, at once whatever e's state:
// it must not wait for the cleanup that finish runs before waking the
// waiters (other entries' release hooks, which may be slow). The last
// waiter to leave a build under way cancels it. A waiter that leaves
// once the result is published gives back the reference finish counted
// for it, on a goroutine of its own, since it may be the last one and
// run a release hook.
func (c *Cache[K, V]) leave(e *entry[K, V]) {
	c.mu.Lock()
	st := e.state.Load() &^ stateGone
	if st == stateBuilding {
		e.waiters--
		// A waiter leaves only once the build is launched: the caller
		// that loads (load.go) waits for its load, and counts as one.
		if e.waiters == 0 {
			e.abandoned = true
			e.cancel()
		}
	}
	c.mu.Unlock()
	if st == stateReady {
		go e.h.Release()
	}
}

// run builds with build. A builder failing with ErrOutOfMemory gets one
// more try after the cache has evicted everything.
func (c *Cache[K, V]) run(ctx context.Context, build BuildFunc[V]) (built[V], error) {
	b, err := c.attempt(ctx, build)
	if ctx.Err() == nil && errors.Is(err, ErrOutOfMemory) {
		c.evictAll()
		b, err = c.attempt(ctx, build)
	}
	return b, err
}

// attempt runs build once and counts it. A panic or runtime.Goexit goes
// through: flight.Go turns it into an error and judge counts it.
func (c *Cache[K, V]) attempt(ctx context.Context, build BuildFunc[V]) (built[V], error) {
	c.builds.Add(1)
	start := c.now()
	v, size, err := build(ctx)
	if err != nil {
		c.failedBuilds.Add(1)
		return built[V]{}, err
	}
	c.buildNanos.Add(int64(c.now().Sub(start)))
	k, ok := any(v).(Keeper)
	return built[V]{val: v, size: max(size, 0), unkept: ok && !k.Keep()}, nil
}

// judge turns how a build ended into its outcome, telling the errors that
// say nothing about the key, and so are not kept, from those that do.
func (c *Cache[K, V]) judge(ctx context.Context, r flight.Result[built[V]]) outcome[V] {
	if !r.Returned {
		c.failedBuilds.Add(1) // attempt counted the run but not its failure
		return outcome[V]{err: r.Err, spurious: true}
	}
	if r.Err == nil {
		return outcome[V]{val: r.Val.val, size: r.Val.size, unkept: r.Val.unkept}
	}
	spurious := ctx.Err() != nil || IsTransient(r.Err) ||
		errors.Is(r.Err, ErrOutOfMemory) // a second one: memory may be freed later
	return outcome[V]{err: r.Err, spurious: spurious}
}

// finish publishes out as e's result and wakes e's waiters; a waiter that
// leaves from now on gives back the reference counted for it (see leave). A success or a
// build error is kept if e is still in the index and caching is on; else e
// leaves the index and a built object is released once its waiters let go.
func (c *Cache[K, V]) finish(e *entry[K, V], out outcome[V]) {
	var t cleanup[V]
	c.mu.Lock()
	gone := e.state.Load() & stateGone
	keep := gone == 0 && !c.disabled && !out.spurious && !out.unkept && (out.err == nil || c.maxErrors > 0)
	if !keep && gone == 0 {
		// Out of the index before the result is published: hits read the
		// state without the lock, and must not take a result that is not
		// kept for a cached one. e is still building, so no object drops.
		c.detach(e, &t)
		gone = stateGone
	}
	if out.err != nil {
		e.err = out.err
		if c.closed && out.spurious {
			e.err = fmt.Errorf("%w: %w", ErrClosed, out.err)
		}
		e.state.Store(stateFailed | gone)
	} else {
		e.h.val, e.size = out.val, out.size
		e.h.acquireN(e.waiters) // each waiter's reference, before anyone can drop e
		e.preTaken = uint64(e.waiters)
		e.state.Store(stateReady | gone)
	}
	switch {
	case keep && out.err == nil:
		c.insert(e, &t)
	case keep:
		c.keepError(e, &t)
	case out.err == nil:
		c.dropObject(e, &t)
	}
	c.mu.Unlock()
	// Waiters wake only once what this build evicted is dropped and
	// released, so that a caller sees the cache's state settled.
	t.run()
	close(e.done)
}
