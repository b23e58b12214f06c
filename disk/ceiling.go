package disk

import (
	"context"
	"time"
)

// The ceiling. A Put that would take the cache past 1.1 x MaxSize stores
// nothing, so that writers that outrun eviction cannot grow the cache
// without bound. But eviction runs in a background goroutine, and a process
// that exits right after its Put (every CLI run, every application under
// the OpenCL layer, which never closes its cache) kills that goroutine
// before it has done anything. Were refusal the whole answer, a cache used
// only by such processes would climb to its ceiling and then refuse every
// entry, for good. So the Put that finds the cache at its ceiling with
// nobody evicting does the owed work itself, one bounded step, as ccache's
// cleanup runs in the compiler invocation that crosses the limit; only a
// Put that finds eviction already running elsewhere is refused, and each
// refusal is counted (Counters.DiskDropped).

// ceiling is the total past which Put stores nothing until eviction catches
// up: 10% over MaxSize. A writer counts its entry under the size file's lock
// before it writes a byte, and checks the ceiling there, so the bytes on
// disk never exceed it, however many writers run at once.
func (s *Store) ceiling() int64 { return s.maxSize() + s.maxSize()/10 }

// payOwed runs, in the caller's Put, one eviction step owed by a cache at
// its ceiling, unless someone is evicting already: this process's
// background goroutine, or two other processes holding the evictors slots.
// It reports whether the Put should try again: the step ran, or another
// process brought the total down meanwhile. A step lists at least
// minStepLeaves leaves (a few tens of milliseconds) and frees the least
// recently used fraction (total-target)/total of them, so one Put pays for
// the next tenth of MaxSize of writes, not one per entry.
func (s *Store) payOwed(ctx context.Context) bool {
	if s.evicting() {
		return false
	}
	slot, ok := s.evictorSlot(ctx)
	if !ok {
		return false
	}
	defer slot.Close()
	// The size file's lock is tried briefly, as by every write: a holder
	// stopped with it must not stop this Put for the lock timeout.
	t, err := s.updateTotalsWait(ctx, s.sizeLockWait, func(*shardTotals) bool { return false })
	if err != nil {
		return false
	}
	total, _ := t.total()
	if total > s.maxSize() {
		if _, _, err := s.evictStep(ctx, t, false); err != nil {
			return false
		}
		total, _ = s.readTotals(ctx).total()
	}
	s.lastTotal.Store(total)
	return total < s.ceiling()
}

// evicting reports whether this process's background goroutine is at work:
// it evicts as long as the cache is over its target.
func (s *Store) evicting() bool {
	s.bg.mu.Lock()
	defer s.bg.mu.Unlock()
	return s.bg.running
}

// refuse records a Put not stored because the cache is at its ceiling:
// a debug line, the background work started, and the count.
func (s *Store) refuse(ctx context.Context, total int64) {
	s.log.Debug("kcache: cache over its ceiling, entry not stored", "total", total)
	s.kick()
	s.refused.Add(1)
	s.flushRefused(ctx, false)
}

// refusalFlushInterval bounds how often refusals are merged into the
// persistent counters: at most once a second, a file lock and a rewrite,
// while eviction is behind a stream of writers. The first refusal of a
// process is merged at once, since a short process has no later chance;
// the rest at the next refusal a second on, or at Close.
const refusalFlushInterval = time.Second

// flushRefused merges the refusals not yet counted into the persistent
// counters, if refusalFlushInterval has passed since the last merge or
// force is set. Best effort: a failure is logged, and the count is lost
// rather than merged twice.
func (s *Store) flushRefused(ctx context.Context, force bool) {
	now := time.Now().UnixNano()
	last := s.refusedFlushed.Load()
	if !force && last != 0 && now-last < int64(refusalFlushInterval) {
		return
	}
	if !s.refusedFlushed.CompareAndSwap(last, now) && !force {
		return // another goroutine merges them
	}
	n := s.refused.Swap(0)
	if n == 0 {
		return
	}
	if err := s.AddCounters(ctx, Counters{DiskDropped: n}); err != nil {
		s.log.Debug("kcache: refused writes not counted", "n", n, "err", err)
	}
}
