package disk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
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

// trimInterval is how often the maintenance pass runs. It walks the whole
// tree, in the background, and ages are counted in days (a week by
// default), so an entry outlives its threshold by a day at most. Go's build
// cache trims as often.
const trimInterval = 24 * time.Hour

// limited reports whether size-based eviction is on.
func (s *Store) limited() bool { return !s.opts.EvictionDisabled && s.maxSize() > 0 }

// target is the total size eviction goes down to.
func (s *Store) target() int64 { return int64(s.opts.EvictTo * float64(s.maxSize())) }

// ceiling is the total past which Put stores nothing until eviction catches
// up: 10% over MaxSize. A writer counts its entry under the size file's lock
// before it writes a byte, and checks the ceiling there, so the bytes on
// disk never exceed it, however many writers run at once.
func (s *Store) ceiling() int64 { return s.maxSize() + s.maxSize()/10 }

// workCounts counts what this process's background work did, for the
// benchmarks.
type workCounts struct {
	steps    atomic.Int64 // steps run
	stepTime atomic.Int64 // nanoseconds spent in them
	evicted  atomic.Int64 // entries they evicted
}

// background is the state of a store's background goroutine.
type background struct {
	mu      sync.Mutex // protects the fields below
	running bool
	kicked  bool          // more work arrived while running
	closed  bool          // Close was called: start nothing more
	done    chan struct{} // closed when the running goroutine exits
	cancel  context.CancelFunc
}

// afterWrite starts the background work a write calls for: eviction if the
// cache (total bytes, -1 when unknown) is over MaxSize, a recount if some
// shard's total is unknown, the maintenance pass if it is due.
func (s *Store) afterWrite(total int64, unknown int) {
	if unknown > 0 || (s.limited() && total > s.maxSize()) || s.trimDue() {
		s.kick()
	}
}

// kick makes sure the background goroutine runs and looks for work again.
func (s *Store) kick() {
	b := &s.bg
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return
	case b.running:
		b.kicked = true
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.running, b.done, b.cancel = true, make(chan struct{}), cancel
	go s.run(ctx, b.done)
}

// run does background work until there is none left.
func (s *Store) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	b := &s.bg
	for {
		s.work(ctx)
		b.mu.Lock()
		if b.kicked && !b.closed && ctx.Err() == nil {
			b.kicked = false
			b.mu.Unlock()
			continue
		}
		b.running = false
		b.cancel()
		b.mu.Unlock()
		return
	}
}

// Close waits for the background work this process is doing (an eviction
// step, the maintenance pass) to finish, until ctx ends; then it stops the
// work where it is, which leaves the cache consistent, and returns ctx's
// error. After Close the store still serves Get, Put and the rest, but
// starts no background work: the next writer of another process does it.
// A process that never calls Close loses nothing: what eviction did not do
// stays on disk for the next writer.
func (s *Store) Close(ctx context.Context) error {
	s.flushRefused(ctx, true)
	b := &s.bg
	b.mu.Lock()
	b.closed = true
	done, cancel := b.done, b.cancel
	b.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		cancel()
		<-done // steps check ctx between leaves: this is short
		return ctx.Err()
	}
}

// wait waits until the background goroutine is idle, or ctx ends.
func (s *Store) wait(ctx context.Context) error {
	s.bg.mu.Lock()
	done := s.bg.done
	s.bg.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// work does what the cache needs now: the maintenance pass if due, a
// recount of unknown totals, eviction down to the target if over MaxSize.
func (s *Store) work(ctx context.Context) {
	s.forgetOwed(ctx)
	if s.trimDue() {
		s.trim(ctx, s.now())
	}
	t := s.readTotals(ctx)
	total, unknown := t.total()
	switch {
	case unknown == shardCount:
		// No size file: a new cache, or one written before shards. Only a
		// walk finds what it holds.
		_ = s.fullPass(ctx, passOptions{})
	case unknown > 0:
		for x := range shardCount {
			if !t.known[x] && ctx.Err() == nil {
				_, _, _ = s.step(ctx, []int{x}, false, stepPlan{}, nil)
			}
		}
	}
	s.lastTotal.Store(total)
	if s.limited() {
		s.evictToTarget(ctx)
	}
}

// stepWorkers is how many goroutines of a step list leaves and remove
// entries. Two keep a step's system calls in flight without taking the
// cores from the writers, whose Puts are what must stay fast.
const stepWorkers = 2

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

// errBusy says another process holds the lock a pass or step needs.
var errBusy = errors.New("disk: another process is at work")

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
	if errors.Is(err, os.ErrNotExist) {
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

// swapJournals replaces each held shard's journal by one record per leaf
// that holds bytes, and sets the shard's total. It holds the journal's
// exclusive lock meanwhile, so no writer is between its journal record and
// its change to the total: what the step sets is exact. Records appended
// since the step read the journal count where the listing did not see
// their change. Writers of the shard wait for that lock, so it is held for
// one shard at a time and for a write to a file already open and a rename.
func (s *Store) swapJournals(ctx context.Context, held []*openShard, leaves map[leafID]*leafState, checkLost bool) error {
	var errs []error
	for _, o := range held {
		if ctx.Err() != nil {
			return ctx.Err() // the next step recounts
		}
		errs = append(errs, s.swapOne(ctx, o, leaves, checkLost))
	}
	return errors.Join(errs...)
}

// swapOne swaps one held shard's journal and sets its total. The new
// journal is locked too before it is renamed into place, and both
// locks are held until the total is set: a writer that opens the journal
// after the rename opens the new file, and would otherwise append and add
// to the total in between, an addition the step's total then overwrote.
func (s *Store) swapOne(ctx context.Context, o *openShard, leaves map[leafID]*leafState, checkLost bool) error {
	var tmp *os.File
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name()) // fails once renamed into place
		}
	}()
	if out, _ := compactJournal(o.x, leaves); !bytes.Equal(out, o.data) {
		// Created before the lock: creating a file is the slow part.
		var err error
		if tmp, err = s.journalTemp(); err != nil {
			return err
		}
	}
	lock, err := s.lockShardFile(ctx, s.journalPath(o.x), s.opts.LockTimeout, false)
	if err != nil {
		return err
	}
	defer lock.Close()
	total, tmp, err := s.swapJournal(o, lock, tmp, leaves)
	if err != nil {
		return err
	}
	s.at("swapped")
	lost := false
	_, err = s.updateTotals(ctx, func(t *shardTotals) bool {
		lost = checkLost && t.known[o.x] && total+evictedFrom(o.x, leaves) < t.bytes[o.x]
		t.bytes[o.x], t.known[o.x] = total, true
		return true
	})
	if lost {
		s.scheduleFullPass(o.x)
	}
	return err
}

// evictedFrom returns what a step evicted from shard x.
func evictedFrom(x int, leaves map[leafID]*leafState) int64 {
	var n int64
	for id, st := range leaves {
		if id.shard() == x {
			n += st.evicted
		}
	}
	return n
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

// swapJournal rewrites one journal, whose exclusive lock the caller holds,
// through tmp (created here if nil and needed), and returns the shard's
// total and tmp, which the caller closes once the total is set: until then
// tmp's exclusive lock keeps writers off the new journal.
func (s *Store) swapJournal(o *openShard, lock, tmp *os.File, leaves map[leafID]*leafState) (int64, *os.File, error) {
	x, j, from := o.x, o.j, o.from
	if !sameFile(lock, j) {
		return 0, tmp, errBusy // replaced by a process without locks; the next step recounts
	}
	data, err := readAll(j)
	if err != nil {
		return 0, tmp, err
	}
	if int64(len(data)) > from {
		countTail(x, data, from, leaves)
	}
	out, total := compactJournal(x, leaves)
	if bytes.Equal(out, data) {
		return total, tmp, nil
	}
	if tmp == nil { // records came since the step read the journal
		if tmp, err = s.journalTemp(); err != nil {
			return 0, nil, err
		}
	}
	if _, err := tmp.Write(out); err != nil {
		return 0, tmp, err
	}
	// The new journal replaces every record of the old: it must reach
	// the disk before the rename does, or a power loss could leave an
	// empty journal in its place, its shard's entries hidden from eviction.
	if s.sync {
		if err := tmp.Sync(); err != nil {
			return 0, tmp, err
		}
	}
	if err := os.Rename(tmp.Name(), s.journalPath(x)); err != nil {
		return 0, tmp, err
	}
	if s.sync {
		syncDir(s.shardsDir())
	}
	return total, tmp, nil
}

// syncDir fsyncs a directory, so that a rename in it survives a power
// loss. Best effort: where it fails, the next step's check of the totals
// catches what a loss did (see scheduleFullPass).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// journalTemp creates a temporary file for a new journal in the shards
// folder, locked: the lock keeps writers off the journal once it is renamed
// into place (see swapOne), and tells a live step's file from a killed
// one's (see removeDeadTemps). A fresh file nobody else has open: the lock
// is free. Where the file system refuses locks, the step goes on without.
func (s *Store) journalTemp() (*os.File, error) {
	f, err := os.CreateTemp(s.shardsDir(), tempPrefix+"*")
	if err != nil {
		return nil, err
	}
	if err := s.modes.fix(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := s.flockNB(int(f.Fd()), false); err != nil && !errors.Is(err, errNoFlock) {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
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
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if err := s.flockNB(int(f.Fd()), false); err == nil || errors.Is(err, errNoFlock) {
			os.Remove(path)
		}
		f.Close()
	}
}

// countTail adds the records appended to shard x's journal data since
// offset from to leaves, where the step's listing did not see their change.
func countTail(x int, data []byte, from int64, leaves map[leafID]*leafState) {
	tail, ends := parseJournal(data[from:])
	for i, r := range tail {
		if r.leaf.shard() != x {
			continue
		}
		st := leaves[r.leaf]
		if st == nil {
			st = &leafState{}
			leaves[r.leaf] = st
		}
		start := from + int64(ends[i]-journalRecLen)
		if !st.listed || start >= st.at {
			st.journal += r.delta
			st.bytes += r.delta
		}
	}
}

// compactJournal returns the journal of shard x as leaves give it, one
// record per leaf that holds bytes, in leaf order, and the shard's total.
func compactJournal(x int, leaves map[leafID]*leafState) ([]byte, int64) {
	var ids []leafID
	for id := range leaves {
		if id.shard() == x {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b leafID) int { return bytes.Compare(a[:], b[:]) })
	var out []byte
	var total int64
	for _, id := range ids {
		st := leaves[id]
		n := st.journal
		if st.listed {
			n = st.bytes
		}
		if n > 0 {
			out = append(out, journalRec{id, n}.marshal()...)
			total += n
		}
	}
	return out, total
}

// sameFile reports whether a and b are open on the same file.
func sameFile(a, b *os.File) bool {
	ai, err1 := a.Stat()
	bi, err2 := b.Stat()
	return err1 == nil && err2 == nil && os.SameFile(ai, bi)
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
