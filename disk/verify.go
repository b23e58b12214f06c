package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
)

// Report is what Verify found.
type Report struct {
	Entries    int       // sound entries
	Bytes      int64     // their size on disk
	Damaged    int       // entries whose record or binary fails a check
	Incomplete int       // leftovers of interrupted writes
	Unreadable int       // directories that could not be listed and entries this user may not read, skipped
	Removed    int       // damaged entries and leftovers removed, with repair
	Problems   []Problem // the first maxProblems damaged, incomplete or unreadable items
}

// Problem is one damaged or incomplete item found by Verify.
type Problem struct {
	Path string
	Err  error // wraps ErrDamaged, ErrIncomplete or ErrUnreadable
}

// maxProblems bounds Report.Problems, so that verifying a wrecked cache of
// millions of entries does not build a report as large.
const maxProblems = 1000

// Verify checks every entry: its record decodes, sits where its key's
// digests place it, and its binary has the recorded length, SHA-256 and
// CRC-32C. With repair it removes damaged entries and leftovers of
// interrupted writes (each under its leaf's lock, rechecked there, so a
// write in progress is never taken for a leftover) and rewrites the size
// file from what remains.
func (s *Store) Verify(ctx context.Context, repair bool) (Report, error) {
	var r Report
	var sk skipped
	err := s.eachLeaf(ctx, &sk, func(leaf string) error {
		c, err := listLeaf(leaf)
		if err != nil {
			sk.add(leaf, err)
			return nil
		}
		if s.tally(&r, leaf, c) && repair {
			r.Removed += s.repairLeaf(ctx, leaf)
		}
		return nil
	})
	r.Unreadable = sk.n
	for _, p := range sk.first {
		if len(r.Problems) < maxProblems {
			r.Problems = append(r.Problems, p)
		}
	}
	if err == nil && repair {
		err = s.recount(ctx)
	}
	return r, err
}

// skipped collects what a walk could not read.
type skipped struct {
	mu    sync.Mutex
	n     int
	first []Problem // the first maxProblems
}

// add records that path could not be read. A path that vanished meanwhile
// (another process removed it) is not a problem.
func (sk *skipped) add(path string, err error) {
	if sk == nil || errors.Is(err, fs.ErrNotExist) {
		return
	}
	sk.mu.Lock()
	defer sk.mu.Unlock()
	sk.n++
	if len(sk.first) < maxProblems {
		sk.first = append(sk.first, Problem{Path: path, Err: fmt.Errorf("%w: %w", ErrUnreadable, err)})
	}
}

// warn logs one warning for everything skipped.
func (sk *skipped) warn(s *Store) {
	if sk.n > 0 {
		s.log.Warn("kcache: parts of the cache could not be read and were skipped", "count", sk.n,
			"first", sk.first[0].Path, "err", sk.first[0].Err)
	}
}

// tally adds a leaf's slots and leftovers to r and reports whether any was
// damaged or incomplete.
func (s *Store) tally(r *Report, leaf string, c leafContents) (bad bool) {
	add := func(path string, err error) {
		switch {
		case errors.Is(err, ErrUnreadable):
			r.Unreadable++ // not this user's to judge, nor to remove
		case errors.Is(err, ErrIncomplete):
			bad = true
			r.Incomplete++
		default:
			bad = true
			r.Damaged++
		}
		if len(r.Problems) < maxProblems {
			r.Problems = append(r.Problems, Problem{Path: path, Err: err})
		}
	}
	for n := range maxSlots {
		if !c.slots[n].used() {
			continue
		}
		in := s.inspect(leaf, n, c.slots[n], true)
		if in.Err != nil {
			add(in.RecordPath(), in.Err)
			continue
		}
		r.Entries++
		r.Bytes += in.Size
	}
	for _, t := range c.temps {
		add(leaf+"/"+t, fmt.Errorf("%w: temporary file", ErrIncomplete))
	}
	return bad
}

// repairLeaf removes, under the leaf's lock, every slot that fails a deep
// check and every temporary file, and returns how many it removed.
func (s *Store) repairLeaf(ctx context.Context, leaf string) int {
	unlock, err := s.lockLeaf(ctx, leaf, false, s.opts.LockTimeout)
	if err != nil {
		return 0
	}
	defer unlock()
	c, err := listLeaf(leaf)
	if err != nil {
		return 0
	}
	removed := 0
	for n := range maxSlots {
		if err := s.inspect(leaf, n, c.slots[n], true).Err; c.slots[n].used() && err != nil && !errors.Is(err, ErrUnreadable) {
			if _, err := s.removeSlot(leaf, n); err == nil {
				removed++
			}
		}
	}
	// The totals are recounted after the walk (Verify), not here.
	removed += removeTemps(leaf, c.temps)
	s.dropLeafIfEmpty(leaf)
	return removed
}

// recount sets every shard's total from what is on disk: the maintenance
// pass without its evictions.
func (s *Store) recount(ctx context.Context) error {
	return s.fullPass(ctx, passOptions{wait: true})
}
