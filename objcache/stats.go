package objcache

import (
	"sync/atomic"
	"time"
)

// Stats is a snapshot of a cache's counters since New.
type Stats struct {
	// Hits counts calls answered from a finished entry without waiting: a
	// built object, or a cached build error.
	Hits uint64
	// Misses counts calls that found no finished entry: GetOrBuild calls
	// that started or waited for a build, and Get calls that found nothing.
	Misses uint64
	// Builds counts builder runs, out-of-memory retries included.
	Builds uint64
	// FailedBuilds counts builder runs that returned an error or panicked.
	FailedBuilds uint64
	// Evictions counts entries evicted by the threshold or on out-of-memory;
	// Remove, Forget and Close are not evictions.
	Evictions uint64
	// BuildTime is the total duration of the successful builder runs: the
	// time the cache's hits may have saved, at one build per hit.
	BuildTime time.Duration
}

// counters are a cache's statistics. Misses and builds are rare (a miss
// means a JIT compile), so shared atomics are cheap enough. Hits are not:
// a hit on a built object is counted by the reference it takes on its
// entry (refs.taken), and added here when the entry leaves the index.
type counters struct {
	retiredHits  atomic.Uint64 // hits of built objects that left the index
	errorHits    atomic.Uint64 // hits on cached build errors
	misses       atomic.Uint64
	builds       atomic.Uint64
	failedBuilds atomic.Uint64
	evictions    atomic.Uint64
	buildNanos   atomic.Int64
}

// Stats returns the cache's counters. It visits every entry to add up hits,
// so it is meant for reports, not hot paths.
func (c *Cache[K, V]) Stats() Stats {
	c.mu.Lock()
	hits := c.retiredHits.Load() + c.errorHits.Load()
	c.idx.Load().each(func(e *entry[K, V]) {
		if e.state.Load() == stateReady {
			hits += e.h.refs.taken() - e.preTaken
		}
	})
	c.mu.Unlock()
	return Stats{
		Hits:         hits,
		Misses:       c.misses.Load(),
		Builds:       c.builds.Load(),
		FailedBuilds: c.failedBuilds.Load(),
		Evictions:    c.evictions.Load(),
		BuildTime:    time.Duration(c.buildNanos.Load()),
	}
}
