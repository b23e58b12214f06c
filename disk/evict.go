package disk

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Eviction and maintenance run off the callers' path. No Put, Get or Lock
// waits for them: a Put that finds the cache over MaxSize, a total unknown,
// or the daily pass due starts this process's background goroutine and
// returns. The work lives on disk, not in the goroutine: a process that
// exits right after its Put leaves the cache over its limit, and the next
// writer of any process sees that and takes the work up.
//
//   - Eviction goes through the shards in turn (the cursor in the size
//     file), one step per shard, until the total is down to EvictTo*MaxSize.
//     A step lists the shard's leaves from its journal and removes its least
//     recently used entries: the oldest fraction (total-target)/total of
//     the shard's bytes. Since keys spread evenly over the shards, the
//     oldest fraction of every shard approximates the oldest fraction of
//     the cache: LRU per shard, the shards visited round-robin. A step
//     costs what one shard holds (1/256 of the cache) and removes a fixed
//     fraction of it, so eviction's work is proportional to what it evicts.
//     Two processes at most step at once, through different shards (each
//     shard has its own lock); when eviction falls behind the writers, Put
//     stops storing at the ceiling (1.1 x MaxSize) rather than wait.
//   - The maintenance pass, at most once per trimInterval, walks the whole
//     tree: entries unused for longer than AgeThreshold go, so do the
//     leftovers of crashed writers, and every shard's journal and total are
//     rebuilt from what is on disk. It is the only walk of the tree, and it
//     also runs when the size file is missing (a new or migrated cache).
//
// Every removal happens under the leaf's lock, taken without waiting: a
// leaf that is busy is being written, so its entry is fresh, and under that
// lock no write is half done, so whatever looks half done is a dead
// writer's. An entry is removed only if its record is unchanged since it was
// listed: a hit that refreshed its access time meanwhile saves it. A Get
// racing the removal reads the whole entry or a miss, since the record goes
// first and a binary without its record is never served.

// limited reports whether size-based eviction is on.
func (s *Store) limited() bool { return !s.opts.EvictionDisabled && s.maxSize() > 0 }

// target is the total size eviction goes down to.
func (s *Store) target() int64 { return int64(s.opts.EvictTo * float64(s.maxSize())) }

// evictors is how many processes evict at once. Steps of different shards
// could all run in parallel, but on a machine of a few cores every evictor
// takes CPU from the writers; two keep up with many writers (and Put's
// ceiling bounds the cache when they do not).
const evictors = 2

// evictToTarget steps through shards while the cache is over MaxSize, or
// over its target once a step has started, until it is down to the
// target, ctx ends, or a whole round frees nothing. It runs only while it
// holds one of the evictors slots; a process that finds them taken leaves
// eviction to their holders.
func (s *Store) evictToTarget(ctx context.Context) {
	slot, ok := s.evictorSlot(ctx)
	if !ok {
		return
	}
	defer slot.Close()
	defer func() {
		// Put's ceiling reads this: it must not stay at a total a step
		// corrected.
		total, _ := s.readTotals(ctx).total()
		s.lastTotal.Store(total)
	}()
	idle := 0
	for started := false; ctx.Err() == nil && idle < shardCount; started = true {
		t := s.readTotals(ctx)
		total, _ := t.total()
		s.lastTotal.Store(total)
		if total <= s.target() || (!started && total <= s.maxSize()) {
			return
		}
		freed, covered, err := s.evictStep(ctx, t, started)
		if err != nil {
			return
		}
		if freed == 0 {
			idle += covered
		} else {
			idle = 0
		}
	}
}

// evictorSlot takes one of the evictors slots without waiting. Closing the
// returned file gives it back; ok is false when every slot is taken.
func (s *Store) evictorSlot(ctx context.Context) (slot *os.File, ok bool) {
	locks, err := s.openStepLocks()
	if err != nil {
		return nil, false
	}
	for k := range evictors {
		if _, err := s.lockStep(ctx, locks, shardCount+k, 0); err == nil {
			return locks, true
		}
	}
	locks.Close()
	return nil, false
}

// evictStep runs one eviction step from the cursor on, given the totals t
// it read, and moves the cursor past the shards the step went through. The
// first step of a round evicts only if the cache is over MaxSize; the
// next ones, while it is over the target.
func (s *Store) evictStep(ctx context.Context, t shardTotals, started bool) (freed int64, covered int, err error) {
	x, err := s.cursor(ctx, 0)
	if err != nil {
		return 0, 0, err
	}
	limit := s.maxSize()
	if started {
		limit = s.target()
	}
	freed, covered, _ = s.step(ctx, []int{x}, true, stepPlan{evict: true, totals: t, limit: limit}, nil)
	_, err = s.cursor(ctx, covered)
	return freed, covered, err
}

// cursor returns the shard eviction visits next and moves the cursor on by
// n shards.
func (s *Store) cursor(ctx context.Context, n int) (int, error) {
	var x int
	_, err := s.updateTotals(ctx, func(t *shardTotals) bool {
		x = t.cursor
		t.cursor = (t.cursor + n) % shardCount
		return n != 0
	})
	return x, err
}

// victims returns the entries to evict, least recently used first: those
// last used before cutoff, then more until budget bytes are planned.
func (s *Store) victims(cands []candidate, budget int64, cutoff time.Time) []candidate {
	slices.SortFunc(cands, func(a, b candidate) int {
		return a.files.src.ModTime().Compare(b.files.src.ModTime())
	})
	var planned int64
	for i, c := range cands {
		aged := !cutoff.IsZero() && c.files.src.ModTime().Before(cutoff)
		if !aged && planned >= budget {
			return cands[:i] // sorted oldest first: no later entry qualifies
		}
		planned += c.files.size()
	}
	return cands
}

// evictEntries removes the victims from several goroutines (removals are
// journaled metadata updates, which the file system runs in parallel) and
// takes what it freed off their leaves' bytes. A victim found busy or used
// meanwhile is spared. It returns the bytes freed.
func (s *Store) evictEntries(ctx context.Context, victims []candidate, leaves map[leafID]*leafState) int64 {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // protects the leaf states
		next  atomic.Int64
		freed atomic.Int64
		count atomic.Int64
	)
	for range min(stepWorkers, len(victims)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(victims)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				c := victims[i]
				if b := s.evictOne(ctx, c); b > 0 {
					mu.Lock()
					leaves[c.id].bytes -= b
					leaves[c.id].evicted += b
					mu.Unlock()
					freed.Add(b)
					count.Add(1)
				}
			}
		})
	}
	wg.Wait()
	s.counts.evicted.Add(count.Load())
	if n := count.Load(); n > 0 {
		s.log.Debug("kcache: evicted cache entries", "entries", n, "bytes", freed.Load(), "dir", s.root)
		// Counted at once, like prune's: the process may not live to merge
		// anything later, and a step's removals dwarf one counter update.
		if err := s.CountEvictions(context.WithoutCancel(ctx), int(n), freed.Load()); err != nil {
			s.log.Debug("kcache: evictions not counted", "err", err)
		}
	}
	return freed.Load()
}

// evictOne removes one entry if its leaf is free and its record unchanged
// since the listing, and returns the bytes freed.
func (s *Store) evictOne(ctx context.Context, c candidate) int64 {
	leaf := c.id.path(s.dir)
	unlock, err := s.lockLeaf(ctx, leaf, false, 0)
	if err != nil {
		return 0
	}
	defer unlock()
	now, err := os.Lstat(srcPath(leaf, c.n))
	if err != nil || !os.SameFile(now, c.files.src) || !now.ModTime().Equal(c.files.src.ModTime()) {
		return 0 // replaced or used since the listing
	}
	freed, _ := s.removeSlot(leaf, c.n)
	s.dropLeafIfEmpty(leaf)
	return freed
}

// removeTemps removes the named temporary files of leaf and returns how
// many it removed. The caller holds the leaf's lock, so none belongs to a
// live writer.
func removeTemps(leaf string, temps []string) int {
	n := 0
	for _, t := range temps {
		if os.Remove(leaf+"/"+t) == nil {
			n++
		}
	}
	return n
}

// dropLeafIfEmpty removes leaf, and the parents it leaves empty, if it
// holds nothing but an unheld build lock. The caller holds the leaf's lock.
// The build lock file is removed only while held, so a waiter that wins it
// afterwards notices it lost its path and takes the new one (lockPath).
func (s *Store) dropLeafIfEmpty(leaf string) {
	names, err := readNames(leaf)
	if err != nil || len(names) > 1 || (len(names) == 1 && names[0] != lockName) {
		return
	}
	if len(names) == 1 {
		f, err := os.OpenFile(leaf+"/"+lockName, os.O_RDWR, 0)
		if err != nil {
			return
		}
		defer f.Close()
		if s.flockNB(int(f.Fd()), false) != nil {
			return // a builder holds it, or locks do not work here
		}
		if os.Remove(leaf+"/"+lockName) != nil {
			return
		}
	}
	// A directory that still holds anything refuses removal, which ends the
	// climb; so does one a writer filled meanwhile.
	for dir := leaf; strings.HasPrefix(dir, s.dir+"/"); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			return
		}
	}
}
