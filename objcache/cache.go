package objcache

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures a Cache. The zero value caches without bound and
// releases nothing.
type Options[V any] struct {
	// Threshold is the most bytes of built objects, as reported by their
	// builders, that the cache keeps; an insert that takes the total over it
	// evicts least recently used entries until the total is back within it.
	// 0 turns eviction off.
	Threshold int64

	// Release frees a runtime object (clReleaseProgram, cuModuleUnload)
	// once the cache has dropped it and no caller holds it. It runs exactly
	// once per built object, outside the cache's lock, on the goroutine that
	// let go last; where that is a waiter that stopped waiting as the build
	// finished, on a goroutine of its own, so that the waiter returns at
	// once. It must not panic. nil releases nothing.
	Release func(V)

	// Disabled turns in-memory caching off: every call that finds no build
	// under way builds, and the object is released once its callers let go.
	// Concurrent callers for one key still share one build, since sharing it
	// costs nothing and the spec's reason to disable caching (memory) holds
	// either way. Build errors are not kept either.
	Disabled bool

	// MaxErrors and MaxErrorBytes bound the build errors the cache keeps
	// (see keptErrors): at most MaxErrors of them, holding at most
	// MaxErrorBytes; past either bound the least recently used go. 0 means
	// DefaultMaxErrors and DefaultMaxErrorBytes; a negative MaxErrors keeps
	// no error. Errors are not charged to Threshold.
	MaxErrors     int
	MaxErrorBytes int64

	// Logger receives the builders' panics, with their stacks; nil
	// discards them (callers still get each panic as an error).
	Logger *slog.Logger
}

// Cache holds live runtime objects (programs, kernels) by key, builds each
// missing one once however many goroutines ask for it, and releases what it
// drops once no caller holds it. The zero Cache is not usable; call New.
// A Cache is safe for concurrent use.
type Cache[K comparable, V any] struct {
	// Read on every hit, written only under mu and rarely: kept together,
	// away from the counters below, so that hits on different cores share
	// this cache line read-only.
	idx       atomic.Pointer[index[K, V]]
	epoch     atomic.Uint64    // recency clock: advances on every insert
	threshold int64            // immutable
	release   func(V)          // immutable
	disabled  bool             // immutable
	log       *slog.Logger     // immutable; nil discards
	maxErrors int              // immutable; <= 0 keeps none
	maxErrB   int64            // immutable
	now       func() time.Time // the clock, for build times; tests replace it
	_         [64]byte

	mu     sync.Mutex         // protects the fields below and every store to idx
	closed bool               // set by Close; no build starts after it
	lru    evictionList[K, V] // built entries, least recently placed first
	size   int64              // bytes of the entries in lru
	count  int                // entries in lru
	errs   evictionList[K, V] // kept build errors, least recently used first
	errB   int64              // bytes charged for the entries in errs
	errN   int                // entries in errs

	counters
}

// New returns an empty cache configured by opts.
func New[K comparable, V any](opts Options[V]) *Cache[K, V] {
	c := &Cache[K, V]{
		threshold: max(opts.Threshold, 0),
		release:   opts.Release,
		disabled:  opts.Disabled,
		log:       opts.Logger,
		maxErrors: cmp.Or(opts.MaxErrors, DefaultMaxErrors),
		maxErrB:   cmp.Or(opts.MaxErrorBytes, DefaultMaxErrorBytes),
		now:       time.Now,
	}
	c.idx.Store(&index[K, V]{})
	return c
}

// BuildFunc builds a missing object. It returns the object and its size in
// bytes, which counts toward Options.Threshold. ctx is detached from the
// cancellation of the caller that started the build, since other callers
// may be waiting on it: it is cancelled only once every caller has stopped
// waiting, or by Close. An error is kept and returned to later callers for
// the same key, unless it is marked Transient, wraps ErrOutOfMemory, or
// comes with ctx cancelled; a panic is recovered and treated like a
// Transient error (see ErrBuildPanic), and so is runtime.Goexit.
type BuildFunc[V any] = func(ctx context.Context) (V, int64, error)

// Keeper is implemented by objects that may say, once built, that they
// must not be kept: the build's callers get the object, as any other, and
// it is released once they let go; the next caller builds again. A
// compiler's output whose inputs changed while it ran is such an object:
// it is what the compiler read, and may not be what its key names.
type Keeper interface {
	Keep() bool
}

// GetOrBuild returns a handle to key's object, building it with build if the
// cache has none. Exactly one goroutine runs a build for a key at a time;
// other callers wait for its result, success or error. A caller whose ctx
// ends stops waiting and returns ctx.Err() at once; the build goes on for
// the others, and its result is cached.
//
// The caller must Release the handle once done with the object. The error,
// if any, is the builder's own (a cached error is returned as it was built),
// ErrClosed, or ctx.Err().
//
// A hit takes no lock and allocates nothing in the cache. But build escapes
// into the build's goroutine, so a closure literal that captures variables
// is allocated by the caller on every call, hit or not; callers on a hot path
// can try Get first and call GetOrBuild on a miss.
func (c *Cache[K, V]) GetOrBuild(ctx context.Context, key K, build BuildFunc[V]) (*Handle[V], error) {
	if h, ok, err := c.finished(key); ok {
		return h, err
	}
	return c.getOrBuildSlow(ctx, key, build)
}

// Get returns a handle to key's object if the cache holds one built, and
// counts a miss otherwise; it never builds or waits. The caller must Release
// the handle.
func (c *Cache[K, V]) Get(key K) (*Handle[V], bool) {
	if e := c.idx.Load().lookup(key); e != nil && e.state.Load() == stateReady && e.h.acquire() {
		c.hit(e)
		return &e.h, true
	}
	c.misses.Add(1)
	return nil, false
}

// hit records a hit on e's object for eviction. The hit itself is counted
// by the reference it took (see Stats). The stamp is written only when
// stale: the epoch advances only on inserts, so a hot entry is stamped once
// per insert, not once per hit; and it lives in e, whose cache line acquire
// has just written, so hits on different entries write no shared line.
func (c *Cache[K, V]) hit(e *entry[K, V]) {
	if c.threshold > 0 {
		if ep := c.epoch.Load(); e.stamp.Load() != ep {
			e.stamp.Store(ep)
		}
	}
}

// Size returns the bytes of the built objects the cache holds.
func (c *Cache[K, V]) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// Len returns the number of built objects the cache holds. In-flight builds
// and cached errors are not counted.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}
