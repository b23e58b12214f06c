package disk

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// PruneOptions says what Prune removes. With neither limit set it removes
// nothing.
type PruneOptions struct {
	// MaxSize removes least recently used entries until the sound entries
	// hold at most this many bytes; 0 means no size limit.
	MaxSize int64
	// OlderThan removes entries unused for longer; 0 means no age limit.
	OlderThan time.Duration
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
}

// PruneReport is what Prune removed (or, with DryRun, would remove).
type PruneReport struct {
	Removed        int   // entries removed
	Freed          int64 // bytes they held
	Entries        int   // sound entries left
	Bytes          int64 // bytes they hold
	Damaged        int   // damaged slots seen and left for Verify
	DryRun         bool
	RemovedEntries []Info // the entries removed, oldest use first
}

// Prune removes entries unused for longer than opts.OlderThan, then least
// recently used ones until what remains fits in opts.MaxSize. Each entry is
// removed as Delete removes it, under its leaf's lock; the removals are
// counted as evictions. Damaged slots are left to Verify.
func (s *Store) Prune(ctx context.Context, opts PruneOptions) (PruneReport, error) {
	r := PruneReport{DryRun: opts.DryRun}
	var entries []Info
	var mu sync.Mutex // protects r and entries
	err := s.WalkParallel(ctx, func(in Info) error {
		mu.Lock()
		defer mu.Unlock()
		if in.Err != nil {
			if !errors.Is(in.Err, ErrUnreadable) {
				r.Damaged++
			}
			return nil
		}
		entries = append(entries, in)
		r.Entries++
		r.Bytes += in.Size
		return nil
	})
	if err != nil {
		return r, err
	}
	slices.SortFunc(entries, func(a, b Info) int {
		return cmp.Or(a.AccessTime.Compare(b.AccessTime), cmp.Compare(a.Dir, b.Dir))
	})
	cutoff := time.Time{}
	if opts.OlderThan > 0 {
		cutoff = s.now().Add(-opts.OlderThan)
	}
	for _, in := range entries {
		old := !cutoff.IsZero() && in.AccessTime.Before(cutoff)
		big := opts.MaxSize > 0 && r.Bytes > opts.MaxSize
		if !old && !big {
			continue
		}
		if !opts.DryRun {
			if err := s.Delete(ctx, in.Key); err != nil {
				return r, err
			}
		}
		r.Removed++
		r.Freed += in.Size
		r.Entries--
		r.Bytes -= in.Size
		r.RemovedEntries = append(r.RemovedEntries, in)
	}
	if !opts.DryRun && r.Removed > 0 {
		if err := s.CountEvictions(ctx, r.Removed, r.Freed); err != nil {
			s.log.Warn("kcache: evictions not counted", "err", err)
		}
	}
	return r, nil
}
