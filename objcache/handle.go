package objcache

import "sync/atomic"

// Bits of Handle.refs. The holder count and the two flags share one word so
// that acquiring, releasing and dropping each decide with a single atomic
// operation whether they are the one that must run the release hook.
const (
	refDropped uint64 = 1 << 62      // the cache no longer holds the entry
	refFreed   uint64 = 1 << 61      // the release hook has run or is running
	refCount   uint64 = refFreed - 1 // holders: handles not yet released
)

// Handle is a counted reference to a cached runtime object. GetOrBuild and
// Get return one; the caller reads the object with Value and gives its
// reference back with Release once it no longer uses the object.
//
// All holders of one entry share one Handle: a hit allocates nothing, so
// there is no per-caller token. Each successful GetOrBuild or Get counts one
// reference, and each reference must be given back by exactly one Release.
// A surplus Release (a second Release by the same caller) is ignored while no
// reference is outstanding, and never makes the release hook run twice; but
// while other holders remain, it gives back one of theirs, and the object may
// then be released while one of them still uses it. Release is safe to call
// from any goroutine and never panics.
type Handle[V any] struct {
	val  V             // set once before the handle is first returned; read-only after
	refs atomic.Uint64 // holder count | refDropped | refFreed
	hook func(V)       // Options.Release; nil for none. Immutable.
}

// Value returns the cached object. It is valid until the caller's Release.
func (h *Handle[V]) Value() V { return h.val }

// Release gives back the caller's reference. Once the cache has dropped the
// entry and the last reference is given back, the cache's release hook runs,
// exactly once, on the goroutine that gave back that last reference.
func (h *Handle[V]) Release() {
	for {
		old := h.refs.Load()
		if old&refCount == 0 {
			return // surplus Release: nothing outstanding to give back
		}
		next := old - 1
		free := next&(refCount|refDropped|refFreed) == refDropped
		if free {
			next |= refFreed
		}
		if h.refs.CompareAndSwap(old, next) {
			if free {
				h.free()
			}
			return
		}
	}
}

// acquire counts one more holder. It fails, counting nothing, once the cache
// has dropped the entry: its object may already be released.
func (h *Handle[V]) acquire() bool {
	if h.refs.Add(1)&refDropped != 0 {
		h.Release()
		return false
	}
	return true
}

// acquireN counts n holders at once, for callers that waited on a build. The
// caller holds the cache's lock and the entry is not dropped yet.
func (h *Handle[V]) acquireN(n int) { h.refs.Add(uint64(n)) }

// drop records that the cache no longer holds the entry. It reports whether
// no one holds it either, in which case the caller must run free (after
// releasing its locks).
func (h *Handle[V]) drop() bool {
	for {
		old := h.refs.Load()
		if old&refDropped != 0 {
			return false
		}
		next := old | refDropped
		free := old&(refCount|refFreed) == 0
		if free {
			next |= refFreed
		}
		if h.refs.CompareAndSwap(old, next) {
			return free
		}
	}
}

// free runs the release hook. The caller won the refFreed bit, so it runs
// once per handle.
func (h *Handle[V]) free() {
	if h.hook != nil {
		h.hook(h.val)
	}
}
