package disk

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// stepWorkers is how many goroutines of a step list leaves and remove
// entries. Two keep a step's system calls in flight without taking the
// cores from the writers, whose Puts are what must stay fast.
const stepWorkers = 2

// stepPlan says what a step evicts.
type stepPlan struct {
	// evict asks for the least recently used fraction (total-target)/total
	// of what the step lists, if the total is over limit. The total is
	// totals' sum, corrected by what the step counts in its own shards.
	evict  bool
	totals shardTotals
	limit  int64
	cutoff time.Time // and every entry last used before it; zero: none
	wait   bool      // wait for another process's step of the shard
	// walked says the step is part of a full pass, whose walk found every
	// leaf: a total lower than recorded is no sign of a lost journal then.
	walked bool
}

// leafState is what a step knows of one leaf.
type leafState struct {
	journal int64 // the sum of its journal records' deltas
	listed  bool  // listed under its lock; bytes and at are then set
	bytes   int64 // committed bytes when listed, less what the step evicted
	evicted int64 // what the step evicted
	at      int64 // the journal's length when it was listed
}

// candidate is a complete entry a step may evict.
type candidate struct {
	id    leafID
	n     int
	files slotFiles
}

// minStepLeaves is how many leaves an eviction step lists at least: it
// takes consecutive shards until it has that many. Victims are chosen
// least recently used first among everything a step lists, so a small
// cache is evicted in exact LRU order (one step lists it all), and a large
// one approximately, one shard of 1/256 of the cache at a time.
const minStepLeaves = 1024

// openShard is a shard a step holds: its step lock, and its journal as the
// step read it.
type openShard struct {
	x      int
	j      *os.File
	data   []byte // the journal as read
	from   int64  // its length
	unlock func()
}

func (o *openShard) close() { o.j.Close(); o.unlock() }

// step lists the leaves of shards xs (those their journals name, and
// extra), or, with more, of shards from xs[0] on until it has
// minStepLeaves; tidies what crashed writers left; evicts as plan says;
// then rewrites each shard's journal and sets its total to what it
// counted. A shard another process is stepping through is skipped. It
// returns the bytes it evicted and how many shards it went through.
func (s *Store) step(ctx context.Context, xs []int, more bool, plan stepPlan, extra []leafID) (freed int64, covered int, err error) {
	start := time.Now()
	defer func() { s.counts.steps.Add(1); s.counts.stepTime.Add(int64(time.Since(start))) }()
	leaves := map[leafID]*leafState{}
	var held []*openShard
	defer func() {
		for _, o := range held {
			o.close()
		}
	}()
	locks, err := s.openStepLocks()
	if err != nil {
		return 0, 0, err
	}
	defer locks.Close()
	for k := 0; k < len(xs) || (more && k < shardCount && len(leaves) < minStepLeaves); k++ {
		x := (xs[0] + k) % shardCount
		if k < len(xs) {
			x = xs[k]
		}
		covered++
		o, err := s.openShard(ctx, locks, x, plan.wait, leaves, len(extra) > 0)
		if err != nil && plan.wait {
			return 0, covered, err
		}
		if o != nil {
			held = append(held, o)
		}
	}
	for _, id := range extra {
		if leaves[id] == nil {
			leaves[id] = &leafState{}
		}
	}
	journals := map[int]*os.File{}
	for _, o := range held {
		journals[o.x] = o.j
	}
	s.at("listing")
	cands := s.listLeaves(ctx, journals, leaves)
	s.at("evicting")
	var listed int64
	for _, st := range leaves {
		if st.listed {
			listed += st.bytes
		}
	}
	freed = s.evictEntries(ctx, s.victims(cands, s.budget(plan, held, leaves, listed), plan.cutoff), leaves)
	s.at("counting")
	return freed, covered, s.swapJournals(ctx, held, leaves, !plan.walked)
}

// budget returns how many bytes of what a step listed (listed bytes) to
// evict. The cache's total is corrected first by what the step counted in
// the shards it holds, so that a total left high by a crash evicts nothing.
func (s *Store) budget(plan stepPlan, held []*openShard, leaves map[leafID]*leafState, listed int64) int64 {
	if !plan.evict || listed == 0 {
		return 0
	}
	total, _ := plan.totals.total()
	mine := map[int]bool{}
	for _, o := range held {
		mine[o.x] = true
		if plan.totals.known[o.x] {
			total -= plan.totals.bytes[o.x]
		}
	}
	for id, st := range leaves {
		switch {
		case !mine[id.shard()]:
		case st.listed:
			total += st.bytes
		default:
			total += st.journal
		}
	}
	if total <= plan.limit || total <= 0 {
		return 0
	}
	frac := float64(total-s.target()) / float64(total)
	return int64(frac * float64(listed))
}

// openShard takes shard x's step lock, waiting if wait is set, and reads
// its journal into leaves. A shard without a journal has no entries: its
// total is set to zero and it is not held (nil), unless create is set.
func (s *Store) openShard(ctx context.Context, locks *os.File, x int, wait bool, leaves map[leafID]*leafState, create bool) (*openShard, error) {
	w := time.Duration(0)
	if wait {
		w = s.opts.LockTimeout
	}
	unlock, err := s.lockStep(ctx, locks, x, w)
	if err != nil {
		return nil, err
	}
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	j, err := s.modes.openFile(s.journalPath(x), flags)
	if errors.Is(err, os.ErrNotExist) {
		defer unlock()
		return nil, s.emptyShard(ctx, x)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	data, err := readAll(j)
	if err != nil {
		j.Close()
		unlock()
		return nil, err
	}
	recs, _ := parseJournal(data)
	for _, r := range recs {
		if r.leaf.shard() != x {
			continue // not this shard's: damage, or a forgery
		}
		st := leaves[r.leaf]
		if st == nil {
			st = &leafState{}
			leaves[r.leaf] = st
		}
		st.journal += r.delta
	}
	return &openShard{x: x, j: j, data: data, from: int64(len(data)), unlock: unlock}, nil
}

// emptyShard sets the total of a shard that has no journal, and so no
// entry, to zero. A writer creates the journal before it changes the
// total, so a journal still missing under the size file's lock means no
// writer has counted anything in the shard.
func (s *Store) emptyShard(ctx context.Context, x int) error {
	_, err := s.updateTotals(ctx, func(t *shardTotals) bool {
		if _, err := os.Lstat(s.journalPath(x)); !errors.Is(err, os.ErrNotExist) {
			return false // a writer came: the next step counts it
		}
		t.bytes[x], t.known[x] = 0, true
		return true
	})
	return err
}

// openStepLocks opens shards/steps.lock, whose byte x is shard x's step
// lock (and bytes shardCount and on the evictors' slots): an open-file-description lock, which like flock is dropped when
// the descriptor closes or its process dies. One file serves every shard,
// so the shards folder holds no file for a shard without entries, and one
// descriptor serves a whole step.
func (s *Store) openStepLocks() (*os.File, error) {
	if err := s.checkShards(); err != nil {
		return nil, err
	}
	if err := s.modes.mkdirAll(s.shardsDir()); err != nil {
		return nil, err
	}
	return s.modes.openFile(s.shardsDir()+"/"+stepsLockName, os.O_RDWR|os.O_CREATE)
}

// lockStep takes shard x's step lock on locks (see openStepLocks), waiting
// up to wait.
func (s *Store) lockStep(ctx context.Context, locks *os.File, x int, wait time.Duration) (unlock func(), err error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: int64(x), Len: 1}
	unlock = func() {
		un := lk
		un.Type = unix.F_UNLCK
		_ = unix.FcntlFlock(locks.Fd(), unix.F_OFD_SETLK, &un)
	}
	deadline := time.Now().Add(wait)
	for {
		err := unix.FcntlFlock(locks.Fd(), unix.F_OFD_SETLK, &lk)
		switch {
		case err == nil:
			return unlock, nil
		case noFlock(err):
			s.warnNoFlock(err)
			return func() {}, nil
		case err != unix.EAGAIN && err != unix.EACCES && err != unix.EINTR:
			return nil, err
		case time.Now().After(deadline):
			return nil, errBusy
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// at calls the test hook, if any.
func (s *Store) at(point string) {
	if s.hook != nil {
		s.hook(point)
	}
}

// readAll reads f from its start.
func readAll(f *os.File) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, info.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && n != len(buf) {
		return nil, err
	}
	return buf[:n], nil
}

// listLeaves lists every leaf of the held shards under its lock, from several goroutines, and
// returns the complete entries found. Each leaf's listing notes the
// journal's length then: a change to the leaf is recorded in the journal
// under the same lock, so its record lies before that length exactly when
// the listing saw the change.
func (s *Store) listLeaves(ctx context.Context, journals map[int]*os.File, leaves map[leafID]*leafState) []candidate {
	ids := make([]leafID, 0, len(leaves))
	for id := range leaves {
		if journals[id.shard()] != nil {
			ids = append(ids, id)
		}
	}
	var (
		mu    sync.Mutex // protects cands and the leaf states
		cands []candidate
		wg    sync.WaitGroup
		next  atomic.Int64
	)
	for range min(stepWorkers, len(ids)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(ids)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				found, bytes, at, ok := s.listOne(ctx, journals[ids[i].shard()], ids[i])
				mu.Lock()
				if ok {
					st := leaves[ids[i]]
					st.listed, st.bytes, st.at = true, bytes, at
					cands = append(cands, found...)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return cands
}

// listOne lists one leaf under its lock, removes what dead writers left in
// it, and returns its complete entries, its committed bytes and the
// journal's length. ok is false when the leaf could not be listed (busy or
// unreadable): its journal records then stand for it.
func (s *Store) listOne(ctx context.Context, j *os.File, id leafID) (cands []candidate, bytes, at int64, ok bool) {
	leaf := id.path(s.dir)
	unlock, err := s.lockLeaf(ctx, leaf, false, time.Second)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, errNotInTree) {
		// Gone, or not the cache's (a link planted in the layout): it
		// holds none of the cache's bytes.
		return nil, 0, journalLen(j), true
	}
	if err != nil {
		return nil, 0, 0, false
	}
	defer unlock()
	at = journalLen(j)
	c, err := listLeaf(leaf)
	if err != nil {
		return nil, 0, 0, false
	}
	for n, f := range c.slots {
		switch {
		case f.src != nil:
			// A record alone is an entry that holds its binary (version
			// 2), or one of version 1 that lost its binary: telling them
			// apart takes a read, and a hit replaces the second anyway.
			f.src = s.unfuture(srcPath(leaf, n), f.src)
			cands = append(cands, candidate{id, n, f})
			bytes += f.size()
		case f.used():
			// Under the leaf's lock nothing is half written: a binary
			// without its record is a dead writer's.
			s.removeSlot(leaf, n)
		}
	}
	removeTemps(leaf, c.temps)
	if len(cands) == 0 {
		s.dropLeafIfEmpty(leaf)
	}
	return cands, bytes, at, true
}

// unfuture stamps now as the access time of the record at path, whose
// info is src, if src says it was used more than mtimeInterval in the
// future: a clock set back, or a copy from a machine ahead. Such an entry
// would otherwise never age out, and rank newest in every step, for as
// long as the clock takes to catch up. It returns the record's info as it
// now is. The caller holds the leaf's lock. Best effort: a record that
// cannot be stamped keeps its time.
func (s *Store) unfuture(path string, src fs.FileInfo) fs.FileInfo {
	now := s.now()
	if src.ModTime().Sub(now) <= mtimeInterval {
		return src
	}
	if os.Chtimes(path, now, now) != nil {
		return src
	}
	if info, err := os.Lstat(path); err == nil {
		return info
	}
	return src
}

// journalLen returns the journal's current length.
func journalLen(j *os.File) int64 {
	info, err := j.Stat()
	if err != nil {
		return 0
	}
	return info.Size()
}
