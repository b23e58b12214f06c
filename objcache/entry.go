package objcache

import (
	"context"
	"sync/atomic"
)

// Values of entry.state. stateGone is a flag added to the others once the
// entry has left the index; the state is final once it is no longer
// stateBuilding.
const (
	stateBuilding uint32 = iota
	stateReady           // built: h.val and size are set
	stateFailed          // failed with a cached error: err is set
	stateGone     uint32 = 1 << 4
)

// entry is the cache's record of one key: the build's state and result, the
// handle callers share, and the bookkeeping of eviction. It is the Go
// counterpart of the spec's BuildResult.
type entry[K comparable, V any] struct {
	// Hot: read on every hit, and written by hits through h's counters and
	// stamp, with atomics only.
	h     Handle[V]
	state atomic.Uint32
	stamp atomic.Uint64 // epoch of the latest hit; see Cache.hit

	key  K
	done chan struct{} // closed once the build finished and its result is set
	err  error         // the build's error; set before done is closed
	size int64         // bytes; set before state becomes stateReady, or when a failed entry is kept (see keepError)

	// Protected by Cache.mu.
	waiters   int                // callers waiting on the build
	preTaken  uint64             // references taken for waiters: taken less hits
	cancel    context.CancelFunc // cancels the build's context
	abandoned bool               // cancel fired because every waiter left
	listed    bool               // e is in the eviction list, or the error list if it failed
	prev      *entry[K, V]       // eviction list links
	next      *entry[K, V]
	pos       uint64   // the stamp e was placed by in the eviction list
	deps      []func() // see AddDependent
}
