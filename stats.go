package kcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// TierStats counts lookups in one tier.
type TierStats struct {
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
	Errors int64 `json:"errors"` // I/O or lock failures; each was a miss to the caller
	// Rejected counts entries found but refused: they failed an integrity
	// or authenticity check (kcache.ErrRejected). Each was also a miss.
	Rejected int64 `json:"rejected,omitempty"`
	// Timeouts counts the errors that were the tier not answering in time.
	Timeouts int64 `json:"timeouts,omitempty"`
	// Waited counts the results this tier served after this process waited
	// for the tier's build lock: for the remote tier, builds of another
	// machine.
	Waited int64 `json:"waited,omitempty"`
	// Dropped counts writes the tier did not store for want of room: the
	// remote tier's write queue full or closed, or a value too large for
	// it even encoded.
	Dropped int64 `json:"dropped,omitempty"`
	// Existed counts writes that stored nothing because the tier already
	// held a value for the key (the remote tier writes with SET NX): most
	// often another machine built the key at the same time.
	Existed int64 `json:"existed,omitempty"`
}

// StatsReporter is implemented by a Store that counts events the Cache
// does not see, such as failures of writes it finishes in the background.
// Cache.Stats adds its counts to the store's tier.
type StatsReporter interface {
	TierStats() TierStats
}

func (t *TierStats) add(o TierStats) {
	t.Hits += o.Hits
	t.Misses += o.Misses
	t.Errors += o.Errors
	t.Rejected += o.Rejected
	t.Timeouts += o.Timeouts
	t.Waited += o.Waited
	t.Dropped += o.Dropped
	t.Existed += o.Existed
}

// Stats is a snapshot of a cache's counters.
type Stats struct {
	Memory       TierStats `json:"memory"`
	Disk         TierStats `json:"disk"`
	Remote       TierStats `json:"remote"`
	Builds       int64     `json:"builds"`        // compiler runs that succeeded
	FailedBuilds int64     `json:"failed_builds"` // compiler runs that failed
	Waited       int64     `json:"waited"`        // entries another process built while this one waited
	// Unstored counts builds whose binary was used but not stored: an
	// input changed while the compiler ran (Pending.Drop).
	Unstored  int64         `json:"unstored,omitempty"`
	BuildTime time.Duration `json:"build_time_ns"` // time spent in successful and failed builds
	SavedTime time.Duration `json:"saved_time_ns"` // build time avoided by hits, less the time the hits took
}

// tierCounters are the live counters behind TierStats.
type tierCounters struct {
	hits, misses, errors       atomic.Int64
	rejected, timeouts, waited atomic.Int64
}

func (t *tierCounters) snapshot() TierStats {
	return TierStats{Hits: t.hits.Load(), Misses: t.misses.Load(), Errors: t.errors.Load(),
		Rejected: t.rejected.Load(), Timeouts: t.timeouts.Load(), Waited: t.waited.Load()}
}

// counters are the live counters behind Stats. They are atomics so that
// recording a hit never takes a lock.
type counters struct {
	memory, disk, remote tierCounters
	builds, failed       atomic.Int64
	waited, unstored     atomic.Int64
	buildNanos           atomic.Int64
	savedNanos           atomic.Int64
}

func (c *counters) tier(o Outcome) *tierCounters {
	switch o {
	case OutcomeMemory:
		return &c.memory
	case OutcomeRemote:
		return &c.remote
	default:
		return &c.disk
	}
}

// tier returns the counters of the tier whose hits report o.
func (s *Stats) tier(o Outcome) *TierStats {
	switch o {
	case OutcomeMemory:
		return &s.Memory
	case OutcomeRemote:
		return &s.Remote
	default:
		return &s.Disk
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		Memory:       c.memory.snapshot(),
		Disk:         c.disk.snapshot(),
		Remote:       c.remote.snapshot(),
		Builds:       c.builds.Load(),
		FailedBuilds: c.failed.Load(),
		Waited:       c.waited.Load(),
		Unstored:     c.unstored.Load(),
		BuildTime:    time.Duration(c.buildNanos.Load()),
		SavedTime:    time.Duration(c.savedNanos.Load()),
	}
}

// saved records that a hit avoided a build of cost built, having itself
// taken took. A hit slower than the build it replaced saves nothing.
func (c *counters) saved(built, took time.Duration) {
	if built > took {
		c.savedNanos.Add(int64(built - took))
	}
}

// StatsMerger is implemented by tiers that keep counters shared by every
// process using them (the disk tier keeps them in its directory). A hit
// writes nothing there: a Cache hands each merger its process's counts in
// one call, at Close, at FlushStats, and after a build once flushInterval
// has passed since the last merge.
type StatsMerger interface {
	MergeStats(ctx context.Context, delta Stats) error
}

// flushInterval is how long a long-running process keeps its counts to
// itself at most, as long as it builds now and then: merging costs a file
// lock and a rewrite, nothing next to a build, and ten minutes keeps the
// shared counters current enough for `kcache stats` while a hit-only run
// still writes nothing until Close.
var flushInterval = 10 * time.Minute

// merger remembers what a Cache has merged, so that each merge hands on
// only the counts made since the one before.
type merger struct {
	mu     sync.Mutex
	merged Stats     // protected by mu
	last   time.Time // protected by mu; when the last merge ran
}

// FlushStats merges the counts this process made since the last merge into
// every tier that implements StatsMerger. Counts are best effort: a tier
// that fails to take them loses them (with an error returned), rather than
// getting them twice later.
func (c *Cache) FlushStats(ctx context.Context) error {
	c.merge.mu.Lock()
	defer c.merge.mu.Unlock()
	// Stats, not the cache's own snapshot: the counts a tier keeps
	// itself (the remote tier's rejected values and timeouts) are merged too.
	now := c.Stats()
	delta := now.sub(c.merge.merged)
	c.merge.merged, c.merge.last = now, time.Now()
	if delta == (Stats{}) {
		return nil
	}
	var errs []error
	for _, t := range c.tiers {
		if m, ok := t.Store.(StatsMerger); ok {
			if err := m.MergeStats(ctx, delta); err != nil {
				errs = append(errs, fmt.Errorf("kcache: merge counters into %s tier: %w", t.Kind, err))
			}
		}
	}
	return errors.Join(errs...)
}

// flushIfDue merges the counts when flushInterval has passed since the last
// merge (or since the first build). A failure is only logged: counters
// never make a build fail.
func (c *Cache) flushIfDue(ctx context.Context) {
	c.merge.mu.Lock()
	if c.merge.last.IsZero() {
		c.merge.last = time.Now()
	}
	due := time.Since(c.merge.last) >= flushInterval
	c.merge.mu.Unlock()
	if due {
		if err := c.FlushStats(ctx); err != nil {
			c.log.Warn("kcache: counters not merged", "err", err)
		}
	}
}

// sub returns s minus o, field by field.
func (s Stats) sub(o Stats) Stats {
	t := func(a, b TierStats) TierStats {
		return TierStats{Hits: a.Hits - b.Hits, Misses: a.Misses - b.Misses, Errors: a.Errors - b.Errors,
			Rejected: a.Rejected - b.Rejected, Timeouts: a.Timeouts - b.Timeouts, Waited: a.Waited - b.Waited,
			Dropped: a.Dropped - b.Dropped, Existed: a.Existed - b.Existed}
	}
	return Stats{
		Memory:       t(s.Memory, o.Memory),
		Disk:         t(s.Disk, o.Disk),
		Remote:       t(s.Remote, o.Remote),
		Builds:       s.Builds - o.Builds,
		FailedBuilds: s.FailedBuilds - o.FailedBuilds,
		Waited:       s.Waited - o.Waited,
		Unstored:     s.Unstored - o.Unstored,
		BuildTime:    s.BuildTime - o.BuildTime,
		SavedTime:    s.SavedTime - o.SavedTime,
	}
}
