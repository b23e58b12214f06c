package objcache

import (
	"context"

	"github.com/kcache/kcache/internal/flight"
)

// A build runs on a goroutine of its own, so that a caller that gives up
// never stops a build others wait for. For an object that is only loaded
// (read from a local binary tier and handed to the driver) that costs more
// than the load: starting or waking the goroutine wakes another thread,
// and the caller then sleeps until it is done. On the H100 a warm load of
// a small CUDA module spent a fifth of its time over the floor there
// (bench/RESULTS-cuda.md, issue 18). So GetOrLoad tries the load on the
// caller's goroutine first, and starts the build only when it fails.

// LoadFunc makes an object without building it (from a local binary tier),
// on the caller's goroutine: it returns the object and its size, or ok
// false when it cannot, for any reason, and the build then runs.
type LoadFunc[V any] = func(ctx context.Context) (v V, size int64, ok bool)

// GetOrLoad is GetOrBuild with a first try, load, run on the caller's
// goroutine by the caller that would start the build: a load that
// succeeds starts no goroutine and wakes no thread. Callers that come
// while it runs wait for it as for a build. When it fails, the build
// starts as in GetOrBuild, and the caller waits for it or leaves.
//
// load gets the caller's ctx, and must be short and bounded (a read of a
// local file, a load into the driver), since neither that caller nor those
// waiting on the key can leave while it runs: a caller whose ctx ends
// during the load returns ctx.Err() only after it, and where the load
// failed, the build goes on for the others. A load that panics or calls
// runtime.Goexit fails the key's callers as a build that does so would.
// A successful load counts as a build in Stats.
func (c *Cache[K, V]) GetOrLoad(ctx context.Context, key K, load LoadFunc[V], build BuildFunc[V]) (*Handle[V], error) {
	if h, ok, err := c.finished(key); ok {
		return h, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e, h, loads, err := c.join(ctx, key, build, true)
	if e == nil {
		return h, err
	}
	if loads && !c.tryLoad(ctx, e, load) {
		c.launchAfterLoad(ctx, e, build)
	}
	return c.wait(ctx, e)
}

// finished is GetOrBuild's fast path: key's result where it is finished,
// without the lock.
func (c *Cache[K, V]) finished(key K) (*Handle[V], bool, error) {
	if e := c.idx.Load().lookup(key); e != nil {
		switch e.state.Load() {
		case stateReady:
			if e.h.acquire() {
				c.hit(e)
				return &e.h, true, nil
			}
		case stateFailed:
			c.errorHit(e)
			return nil, true, e.err
		}
	}
	return nil, false, nil
}

// loaded is what one load made.
type loaded[V any] struct {
	val  V
	size int64
	ok   bool
}

// tryLoad runs load for e, whose build is not launched, and publishes its
// result, or a panic's error, unless it failed: then it reports false, and
// e is still building with the caller as one of its waiters.
func (c *Cache[K, V]) tryLoad(ctx context.Context, e *entry[K, V], load LoadFunc[V]) (finished bool) {
	start := c.now()
	flight.Run(ctx, c.log, func(ctx context.Context) (loaded[V], error) {
		v, size, ok := load(ctx)
		return loaded[V]{val: v, size: max(size, 0), ok: ok}, nil
	}, func(r flight.Result[loaded[V]]) {
		switch {
		case !r.Returned:
			c.builds.Add(1)
			c.failedBuilds.Add(1)
			c.finish(e, outcome[V]{err: r.Err, spurious: true})
			finished = true
		case r.Val.ok:
			c.builds.Add(1)
			c.buildNanos.Add(int64(c.now().Sub(start)))
			c.finish(e, outcome[V]{val: r.Val.val, size: r.Val.size})
			finished = true
		}
	})
	return finished
}

// launchAfterLoad starts e's build after its load failed, unless no one
// needs it: the cache was closed meanwhile (e fails with ErrClosed, as a
// build Close cancelled would), or the caller's ctx has ended and no other
// caller waits (e fails with ctx.Err(), and leaves the index first, so that
// no caller that comes later gets that error).
func (c *Cache[K, V]) launchAfterLoad(ctx context.Context, e *entry[K, V], build BuildFunc[V]) {
	var t cleanup[V]
	var err error
	c.mu.Lock()
	switch {
	case c.closed:
		err = ErrClosed
	case ctx.Err() != nil && e.waiters == 1:
		err = ctx.Err()
		c.detach(e, &t)
	default:
		c.launch(ctx, e, build)
	}
	c.mu.Unlock()
	t.run()
	if err != nil {
		c.finish(e, outcome[V]{err: err, spurious: true})
	}
}
