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

// Eviction and maintenance. Both are passes over the whole tree, run by one
// process at a time (the holder of evict.lock; a process that finds it busy
// skips its pass, since the running one serves it too):
//
//   - eviction, when a Put takes the total over MaxSize: least recently used
//     entries go until the total is at most EvictTo*MaxSize;
//   - maintenance, at most once per trimInterval, from a Put: entries unused
//     for longer than AgeThreshold go, and so does what crashed writers left.
//
// Both first remove leftovers (temporary files, a binary without its record,
// a record without its binary) and leaf directories that hold nothing, and
// both rewrite the size file from what they walked. Every removal happens
// under the leaf's lock, taken without waiting: a leaf that is busy is being
// written, so its entry is fresh, and under that lock no write is half done,
// so whatever looks half done is a dead writer's. An entry is removed only
// if its record is unchanged since the walk; a hit that refreshed its access
// time meanwhile saves it.

// trimInterval is how often the maintenance pass runs. It walks the whole
// tree, which a Put should pay for rarely, and ages are counted in days
// (a week by default), so an entry outlives its threshold by a day at most.
// Go's build cache trims as often.
const trimInterval = 24 * time.Hour

// limited reports whether size-based eviction is on.
func (s *Store) limited() bool { return !s.opts.EvictionDisabled && s.opts.MaxSize > 0 }

// target is the total size eviction goes down to.
func (s *Store) target() int64 { return int64(s.opts.EvictTo * float64(s.opts.MaxSize)) }

// afterWrite does the bookkeeping of a write that grew the cache by delta
// bytes. It is best effort: a failure here leaves the total off or the cache
// over its limit until a later pass, which is no reason to fail a Put.
func (s *Store) afterWrite(ctx context.Context, delta int64) {
	if delta != 0 {
		total, ok := s.addSize(ctx, delta)
		if ok && s.limited() && total > s.opts.MaxSize {
			s.evict(ctx)
		}
	}
	s.maybeTrim(ctx)
}

// evict runs an eviction pass unless another process is running one.
func (s *Store) evict(ctx context.Context) {
	lock, err := s.lockFile(ctx, evictName, 0)
	if err != nil {
		return
	}
	defer lock.Close()
	s.pass(ctx, time.Time{})
}

// maybeTrim runs the maintenance pass if none ran for trimInterval.
func (s *Store) maybeTrim(ctx context.Context) {
	now := s.now()
	if now.UnixNano() < s.nextTrim.Load() {
		return
	}
	if last, ok := s.lastTrim(); ok && recent(now, last) {
		s.nextTrim.Store(last.Add(trimInterval).UnixNano())
		return
	}
	s.trim(ctx, now)
}

// recent reports whether a pass at last makes one at now unnecessary. A
// stamp more than an hour in the future (a clock set back, a damaged file)
// postpones nothing.
func recent(now, last time.Time) bool {
	d := now.Sub(last)
	return d < trimInterval && d > -mtimeInterval
}

// trim runs the maintenance pass unless another process is running a pass
// or has just run one.
func (s *Store) trim(ctx context.Context, now time.Time) {
	lock, err := s.lockFile(ctx, evictName, 0)
	if err != nil {
		return
	}
	defer lock.Close()
	if last, ok := s.lastTrim(); ok && recent(now, last) {
		return
	}
	// Stamp first: a pass killed midway is then not restarted by every Put
	// of the day; the next day's pass finishes its work.
	s.writeStamp(now)
	s.nextTrim.Store(now.Add(trimInterval).UnixNano())
	var cutoff time.Time
	if !s.opts.EvictionDisabled && s.opts.AgeThreshold > 0 {
		// Access times lag by up to mtimeInterval; count that in the
		// entry's favor.
		cutoff = now.Add(-s.opts.AgeThreshold - mtimeInterval)
	}
	s.pass(ctx, cutoff)
}

// lastTrim reads the time of the last maintenance pass.
func (s *Store) lastTrim() (time.Time, bool) {
	b, err := os.ReadFile(s.dir + "/" + trimName)
	if err != nil {
		return time.Time{}, false
	}
	sec, err := parseDecimal(b)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}

// writeStamp records a maintenance pass at now. Best effort: without the
// stamp the next Put runs the pass again, which is merely slow.
func (s *Store) writeStamp(now time.Time) {
	f, err := os.OpenFile(s.dir+"/"+trimName, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return
	}
	defer f.Close()
	_ = writeDecimal(f, max(now.Unix(), 0))
}

// candidate is a complete entry a pass may evict.
type candidate struct {
	leaf  string
	n     int
	files slotFiles
}

// pass walks the tree, tidies it, evicts entries last used before cutoff
// (none if cutoff is zero) and, if the cache is over MaxSize, least recently
// used entries down to the target, then corrects the size file. The caller
// holds evict.lock.
func (s *Store) pass(ctx context.Context, cutoff time.Time) {
	before, beforeKnown := s.readSize(ctx)
	entries, untidy, total, err := s.survey(ctx)
	if err != nil {
		return // ctx ended; the next pass starts over
	}
	removed := s.tidy(ctx, untidy)
	count, freed := s.evictEntries(ctx, entries, total-removed, cutoff)
	removed += freed
	if count > 0 {
		s.log.Info("kcache: evicted cache entries", "entries", count, "bytes", freed, "dir", s.root)
	}
	_, _ = s.updateTotal(ctx, func(cur int64, known bool) (int64, error) {
		// Add what other processes added or removed meanwhile. An entry
		// written during the walk may be counted twice, in the walk and in
		// the difference: that errs toward evicting early, and the next
		// pass corrects it.
		n := total - removed
		if known && beforeKnown {
			n += cur - before
		}
		return max(n, 0), nil
	})
}

// survey lists every complete entry, every leaf that holds leftovers or no
// entry at all, and the total size of records and binaries.
func (s *Store) survey(ctx context.Context) (entries []candidate, untidy []string, total int64, err error) {
	var mu sync.Mutex // protects the results: leaves are listed in parallel
	err = s.eachLeafParallel(ctx, func(leaf string) error {
		c, err := listLeaf(leaf)
		if err != nil {
			return nil
		}
		tidy := len(c.temps) == 0
		var found []candidate
		var size int64
		for n, f := range c.slots {
			size += f.size()
			if f.src != nil && f.bin != nil {
				found = append(found, candidate{leaf, n, f})
			} else if f.used() {
				tidy = false
			}
		}
		mu.Lock()
		defer mu.Unlock()
		entries = append(entries, found...)
		total += size
		if !tidy || len(found) == 0 {
			untidy = append(untidy, leaf)
		}
		return nil
	})
	return entries, untidy, total, err
}

// evictEntries removes entries last used before cutoff and, if the cache
// (total bytes) is over MaxSize, least recently used entries until it is at
// most the target. It picks the victims in order, then removes them from
// several goroutines: removals are journaled metadata updates, which the
// file system runs in parallel. A victim found busy or used meanwhile is
// spared, and the next pass makes up any shortfall. It returns how many
// entries and bytes it removed.
func (s *Store) evictEntries(ctx context.Context, entries []candidate, total int64, cutoff time.Time) (count int, freed int64) {
	victims := s.victims(entries, total, cutoff)
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		n     atomic.Int64
		bytes atomic.Int64
	)
	for range min(walkers, len(victims)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(victims)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				if b := s.evictOne(ctx, victims[i]); b > 0 {
					n.Add(1)
					bytes.Add(b)
				}
			}
		})
	}
	wg.Wait()
	return int(n.Load()), bytes.Load()
}

// victims returns the entries to evict, least recently used first.
func (s *Store) victims(entries []candidate, total int64, cutoff time.Time) []candidate {
	slices.SortFunc(entries, func(a, b candidate) int {
		return a.files.src.ModTime().Compare(b.files.src.ModTime())
	})
	over := s.limited() && total > s.opts.MaxSize
	var planned int64
	for i, c := range entries {
		aged := !cutoff.IsZero() && c.files.src.ModTime().Before(cutoff)
		big := over && total-planned > s.target()
		if !aged && !big {
			return entries[:i] // sorted oldest first: no later entry qualifies
		}
		planned += c.files.size()
	}
	return entries
}

// evictOne removes one entry if its leaf is free and its record unchanged
// since the walk, and returns the bytes freed.
func (s *Store) evictOne(ctx context.Context, c candidate) int64 {
	unlock, err := s.lockLeaf(ctx, c.leaf, false, 0)
	if err != nil {
		return 0
	}
	defer unlock()
	now, err := os.Lstat(srcPath(c.leaf, c.n))
	if err != nil || !os.SameFile(now, c.files.src) || !now.ModTime().Equal(c.files.src.ModTime()) {
		return 0 // replaced or used since the walk
	}
	freed, _ := s.removeSlot(c.leaf, c.n)
	s.dropLeafIfEmpty(c.leaf)
	return freed
}

// tidy removes leftovers from each leaf and drops leaves left with nothing,
// and returns the bytes freed.
func (s *Store) tidy(ctx context.Context, leaves []string) int64 {
	var freed int64
	for _, leaf := range leaves {
		freed += s.tidyLeaf(ctx, leaf)
	}
	return freed
}

func (s *Store) tidyLeaf(ctx context.Context, leaf string) int64 {
	unlock, err := s.lockLeaf(ctx, leaf, false, 0)
	if err != nil {
		return 0 // busy: being written; the next pass looks again
	}
	defer unlock()
	c, err := listLeaf(leaf)
	if err != nil {
		return 0
	}
	var freed int64
	for n, f := range c.slots {
		if f.used() && (f.src == nil || f.bin == nil) {
			f, _ := s.removeSlot(leaf, n)
			freed += f
		}
	}
	removeTemps(leaf, c.temps)
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
		if flockNB(int(f.Fd())) != nil {
			return // a builder holds it
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
