package disk

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// trimInterval is how often the maintenance pass runs. It walks the whole
// tree, in the background, and ages are counted in days (a week by
// default), so an entry outlives its threshold by a day at most. Go's build
// cache trims as often.
const trimInterval = 24 * time.Hour

// trimDue reports whether the maintenance pass is due.
func (s *Store) trimDue() bool {
	now := s.now()
	// A cached time more than a pass away is a clock set back since it
	// was cached: the stamp on disk decides instead.
	if next := s.nextTrim.Load(); now.UnixNano() < next && next-now.UnixNano() <= int64(trimInterval) {
		return false
	}
	if last, ok := s.lastTrim(); ok && recent(now, last) {
		s.nextTrim.Store(last.Add(trimInterval).UnixNano())
		return false
	}
	return true
}

// recent reports whether a pass at last makes one at now unnecessary. A
// stamp more than an hour in the future (a clock set back, a damaged file)
// postpones nothing.
func recent(now, last time.Time) bool {
	d := now.Sub(last)
	return d < trimInterval && d > -mtimeInterval
}

// trim runs the maintenance pass unless another process is running one or
// has just run one.
func (s *Store) trim(ctx context.Context, now time.Time) {
	var cutoff time.Time
	if !s.opts.EvictionDisabled && s.opts.AgeThreshold > 0 {
		// Access times lag by up to mtimeInterval; count that in the
		// entry's favor.
		cutoff = now.Add(-s.opts.AgeThreshold - mtimeInterval)
	}
	_ = s.fullPass(ctx, passOptions{cutoff: cutoff, stamp: now})
}

// lastTrim reads the time of the last maintenance pass.
func (s *Store) lastTrim() (time.Time, bool) {
	b, err := readSmallFile(s.dir + "/" + trimName)
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
// stamp the next Put starts the pass again, which is merely wasteful.
func (s *Store) writeStamp(now time.Time) {
	f, err := s.modes.openFile(s.dir+"/"+trimName, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return
	}
	defer f.Close()
	_ = writeDecimal(f, max(now.Unix(), 0))
}

// passOptions says what a full pass does besides recounting.
type passOptions struct {
	cutoff time.Time // evict entries last used before it; zero: none
	stamp  time.Time // the maintenance pass's time, recorded; zero: not one
	wait   bool      // wait for another process's pass rather than skip
}

// fullPass walks the tree, then steps through every shard with the leaves
// the walk found in it, so that every leaf is in its journal and every
// total is exact. It also evicts entries last used before opts.cutoff. One
// process runs it at a time.
func (s *Store) fullPass(ctx context.Context, opts passOptions) error {
	wait := time.Duration(0)
	if opts.wait {
		wait = s.opts.LockTimeout
	}
	lock, err := s.lockFile(ctx, evictName, wait)
	if err != nil {
		return errBusy
	}
	defer lock.Close()
	if !opts.stamp.IsZero() {
		if last, ok := s.lastTrim(); ok && recent(opts.stamp, last) {
			return nil // another process has just run it
		}
		// Stamp first: a pass killed midway is then not restarted by every
		// Put of the day; the next day's pass finishes its work.
		s.writeStamp(opts.stamp)
		s.nextTrim.Store(opts.stamp.Add(trimInterval).UnixNano())
		s.removeLeftovers()
	}
	s.removeDeadTemps()
	var sk skipped
	defer sk.warn(s)
	var mu sync.Mutex // protects found
	var found [shardCount][]leafID
	err = s.eachLeafParallel(ctx, &sk, func(leaf string) error {
		if id, ok := idOf(s.dir, leaf); ok {
			mu.Lock()
			found[id.shard()] = append(found[id.shard()], id)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for x := range shardCount {
		if _, _, err := s.step(ctx, []int{x}, false, stepPlan{cutoff: opts.cutoff, wait: true, walked: true}, found[x]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// scheduleFullPass makes the maintenance pass due now. A step calls it
// when it counts less in a shard than the shard's recorded total, less
// what it evicted: writers add to both under one lock, so the journal has
// lost records (power lost before the file system wrote it back), and
// entries it no longer names are hidden from eviction and the totals. Only
// a walk finds them. (A writer killed between its count and its commit
// looks the same; the pass then merely finds nothing to add.)
func (s *Store) scheduleFullPass(x int) {
	// Debug, not a warning: a killed writer, the likelier cause, is no
	// fault of the user's.
	s.log.Debug("kcache: a shard counted less than its recorded total; recounting the whole cache", "shard", x, "dir", s.root)
	s.writeStamp(time.Unix(0, 0))
	s.nextTrim.Store(0)
	s.kick()
}

// deadTempAge is how old a temporary file of the shards folder must be
// before the maintenance pass takes it for a killed step's. A live step's
// lives for the wait for one journal lock (bounded by the lock timeout) and
// a rename; the age only guards the moment between its creation and its
// lock.
const deadTempAge = time.Minute

// removeDeadTemps removes the temporary files that killed steps left in
// the shards folder: those older than deadTempAge whose lock is free. The
// maintenance pass calls it; no one else removes them. Best effort.
func (s *Store) removeDeadTemps() {
	names, err := readNames(s.shardsDir())
	if err != nil {
		return
	}
	for _, name := range names {
		path := s.shardsDir() + "/" + name
		if !strings.HasPrefix(name, tempPrefix) {
			continue
		}
		if info, err := os.Lstat(path); err != nil || time.Since(info.ModTime()) < deadTempAge {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO: see readFlags
		if err != nil {
			continue
		}
		if err := s.flockNB(int(f.Fd()), false); err == nil || errors.Is(err, errNoFlock) {
			os.Remove(path)
		}
		f.Close()
	}
}
