package objcache

import (
	"context"
	"errors"
	"fmt"
)

// errGoexit is what waiters get when a builder called runtime.Goexit (as
// t.FailNow does): recover cannot stop it, but waiters must not hang.
var errGoexit = errors.New("objcache: build called runtime.Goexit")

// outcome is what one builder run produced.
type outcome[V any] struct {
	val      V
	size     int64
	err      error
	panicked bool
	// spurious: the error says nothing about the key (the spec's "spurious
	// error"), so it must not be cached: the next caller builds again.
	spurious bool
}

// getOrBuildSlow is GetOrBuild past a fast-path miss: join or start the
// key's build under the lock, then wait for it without the lock.
func (c *Cache[K, V]) getOrBuildSlow(ctx context.Context, key K, build BuildFunc[V]) (*Handle[V], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e, h, err := c.join(ctx, key, build)
	if e == nil {
		return h, err
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		if c.leave(e) {
			return nil, ctx.Err()
		}
		<-e.done // finished meanwhile: this caller's reference is counted
	}
	if e.err != nil {
		return nil, e.err
	}
	return &e.h, nil
}

// join finds key's entry under the lock. It returns the result at once for
// a finished entry, or the entry to wait on, starting its build if needed.
func (c *Cache[K, V]) join(ctx context.Context, key K, build BuildFunc[V]) (*entry[K, V], *Handle[V], error) {
	var t cleanup[V]
	c.mu.Lock()
	defer func() {
		c.mu.Unlock()
		t.run()
	}()
	if c.closed {
		return nil, nil, ErrClosed
	}
	e := c.idx.Load().lookup(key)
	if e != nil {
		switch e.state.Load() {
		case stateReady:
			e.h.acquire() // cannot fail: entries in the index are not dropped
			c.hit(e)
			return nil, &e.h, nil
		case stateFailed:
			c.errorHits.Add(1)
			return nil, nil, e.err
		}
		if !e.abandoned {
			e.waiters++
			c.misses.Add(1)
			return e, nil, nil
		}
		// Its build was cancelled when its last waiter left and will likely
		// fail for that reason alone: build afresh instead of waiting.
		c.detach(e, &t)
	}
	c.misses.Add(1)
	return c.start(ctx, key, build), nil, nil
}

// start inserts a building entry for key and runs its build on a goroutine
// of its own, so that no caller's cancellation or return stops it. Its
// context keeps ctx's values but not its cancellation. c.mu is held.
func (c *Cache[K, V]) start(ctx context.Context, key K, build BuildFunc[V]) *entry[K, V] {
	e := &entry[K, V]{key: key, done: make(chan struct{}), waiters: 1}
	e.h.hook = c.release
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	c.idx.Store(c.idx.Load().with(key, e))
	go c.run(bctx, e, build)
	return e
}

// leave takes a waiter whose ctx ended off e. It reports false if the build
// finished first, in which case the waiter takes the result after all (its
// reference is already counted). The last waiter to leave cancels the build.
func (c *Cache[K, V]) leave(e *entry[K, V]) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.state.Load()&^stateGone != stateBuilding {
		return false
	}
	e.waiters--
	if e.waiters == 0 {
		e.abandoned = true
		e.cancel()
	}
	return true
}

// run builds e and publishes the outcome. A builder failing with
// ErrOutOfMemory gets one more try after the cache has evicted everything.
func (c *Cache[K, V]) run(ctx context.Context, e *entry[K, V], build BuildFunc[V]) {
	finished := false
	defer func() {
		if !finished {
			c.finish(e, outcome[V]{err: errGoexit, spurious: true})
		}
		e.cancel() // frees the context's resources
	}()
	out := c.attempt(ctx, build)
	if !out.panicked && ctx.Err() == nil && errors.Is(out.err, ErrOutOfMemory) {
		c.evictAll()
		out = c.attempt(ctx, build)
		if errors.Is(out.err, ErrOutOfMemory) {
			out.spurious = true // memory may be freed later: try again then
		}
	}
	c.finish(e, out)
	finished = true
}

// attempt runs build once, turning a panic into an error, and counts it.
func (c *Cache[K, V]) attempt(ctx context.Context, build BuildFunc[V]) (out outcome[V]) {
	c.builds.Add(1)
	start := c.now()
	returned := false
	defer func() {
		if r := recover(); r != nil {
			out = outcome[V]{err: panicError(r), panicked: true, spurious: true}
		} else if !returned {
			c.failedBuilds.Add(1) // runtime.Goexit: run reports it
			return
		}
		if out.err != nil {
			c.failedBuilds.Add(1)
			return
		}
		c.buildNanos.Add(int64(c.now().Sub(start)))
	}()
	out.val, out.size, out.err = build(ctx)
	returned = true
	out.size = max(out.size, 0)
	out.spurious = out.err != nil && (ctx.Err() != nil || IsTransient(out.err))
	return out
}

// finish publishes out as e's result and wakes e's waiters; waiters that
// ask to leave from now on get the result (see leave). A success or a
// build error is kept if e is still in the index and caching is on; else e
// leaves the index and a built object is released once its waiters let go.
func (c *Cache[K, V]) finish(e *entry[K, V], out outcome[V]) {
	var t cleanup[V]
	c.mu.Lock()
	gone := e.state.Load() & stateGone
	keep := gone == 0 && !c.disabled && !out.spurious
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
	case keep: // a build error stays in the index as it is
	case out.err == nil:
		c.dropObject(e, &t)
	}
	c.mu.Unlock()
	// Waiters wake only once what this build evicted is dropped and
	// released, so that a caller sees the cache's state settled.
	t.run()
	close(e.done)
}
