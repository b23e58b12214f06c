package objcache

import "sync/atomic"

// Bits of Handle.acq.
const (
	refDropped uint64 = 1 << 63        // the cache no longer holds the entry
	refCount   uint64 = refDropped - 1 // references ever taken
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
	val V // set once before the handle is first returned; read-only after

	// References are counted as two monotonic counters rather than one
	// count, so that a hit costs one atomic add to take a reference and one
	// to give it back, and the number taken doubles as the entry's hit
	// counter. Every release follows its acquisition, so rel <= acq at all
	// times, and whoever reads rel then acq and finds them equal knows that
	// no one held the object in between.
	acq   atomic.Uint64 // references taken | refDropped
	rel   atomic.Uint64 // references given back
	freed atomic.Bool   // the release hook has run or is running
	hook  func(V)       // Options.Release; nil for none. Immutable.
}

// Value returns the cached object. It is valid until the caller's Release.
func (h *Handle[V]) Value() V { return h.val }

// Release gives back the caller's reference. Once the cache has dropped the
// entry and the last reference is given back, the cache's release hook runs,
// exactly once, on the goroutine that gave back that last reference.
func (h *Handle[V]) Release() {
	r := h.rel.Add(1)
	if a := h.acq.Load(); a >= refDropped || r > a {
		h.releaseSlow(r, a) // kept out of line so that Release inlines
	}
}

// releaseSlow is Release once the entry is dropped, or for a surplus
// Release: r and a are the counters as Release read them.
func (h *Handle[V]) releaseSlow(r, a uint64) {
	if r > a&refCount {
		h.rel.Add(^uint64(0)) // surplus: nothing outstanding to give back
		return
	}
	if a&refDropped != 0 && r == a&refCount {
		h.free()
	}
}

// acquire takes a reference. It fails, keeping none, once the cache has
// dropped the entry: its object may already be released.
func (h *Handle[V]) acquire() bool {
	if a := h.acq.Add(1); a >= refDropped {
		h.releaseSlow(h.rel.Add(1), h.acq.Load())
		return false
	}
	return true
}

// acquireN takes n references at once, for the callers that waited on a
// build. The caller holds the cache's lock and the entry is not dropped.
func (h *Handle[V]) acquireN(n int) { h.acq.Add(uint64(n)) }

// drop records that the cache no longer holds the entry, releasing the
// object if no one holds it either, and returns the number of references
// ever taken: no more can be. It reports whether no one holds the object;
// the caller then runs free, once it has released its locks.
func (h *Handle[V]) drop() (taken uint64, free bool) {
	a := h.acq.Or(refDropped)
	if a&refDropped != 0 {
		return a & refCount, false
	}
	// Read rel, then acq again: failed acquisitions may have come and gone
	// since the Or, and only a current pair proves that no one holds it.
	r := h.rel.Load()
	return a & refCount, r == h.acq.Load()&refCount
}

// free runs the release hook unless it has run. Several goroutines may see
// the last reference go (a drop and a failed acquisition, say); the freed
// bit picks one.
func (h *Handle[V]) free() {
	if h.freed.CompareAndSwap(false, true) && h.hook != nil {
		h.hook(h.val)
	}
}
