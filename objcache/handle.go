package objcache

// Handle is a counted reference to a cached runtime object. GetOrBuild and
// Get return one; the caller reads the object with Value and gives its
// reference back with Release once it no longer uses the object.
//
// All holders of one entry share one Handle: a hit allocates nothing, so
// there is no per-caller token. Each successful GetOrBuild or Get counts one
// reference, and each reference must be given back by exactly one Release.
// A surplus Release (a second Release by the same caller) never makes the
// release hook run twice and never panics, but it gives back a reference
// that someone else may hold: the object may then be released while they
// still use it. Release is safe to call from any goroutine.
type Handle[V any] struct {
	val  V       // set once before the handle is first returned; read-only after
	refs refs    // see refs
	hook func(V) // Options.Release; nil for none. Immutable.
}

// Value returns the cached object. It is valid until the caller's Release.
func (h *Handle[V]) Value() V { return h.val }

// Release gives back the caller's reference. Once the cache has dropped the
// entry and the last reference is given back, the cache's release hook runs,
// exactly once, on the goroutine that gave back that last reference.
func (h *Handle[V]) Release() {
	if h.refs.release() {
		h.free()
	}
}

// acquire takes a reference, or fails once the cache has dropped the entry:
// its object may already be released.
func (h *Handle[V]) acquire() bool {
	ok, free := h.refs.acquire()
	if free {
		h.free()
	}
	return ok
}

// acquireN takes n references at once, for the callers that waited on a
// build. The caller holds the cache's lock and the entry is not dropped.
func (h *Handle[V]) acquireN(n int) { h.refs.acq.Add(uint64(n)) }

// drop records that the cache no longer holds the entry and returns the
// number of references ever taken. It reports whether no one holds the
// object; the caller then runs free, once it has released its locks.
func (h *Handle[V]) drop() (taken uint64, free bool) { return h.refs.drop() }

// free runs the release hook; the caller has claimed it (refs.settle).
func (h *Handle[V]) free() {
	if h.hook != nil {
		h.hook(h.val)
	}
}
