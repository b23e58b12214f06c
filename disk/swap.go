package disk

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
)

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
	s.at("swap:staged")
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
