package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The cache's own size limit. MaxSize is a setting of each process, yet
// eviction removes every process's entries: one process run with a small
// limit would empty the cache of everyone else's. So the cache keeps a
// limit of its own in its root, as ccache keeps max_size in ccache.conf:
//
//	max-size   one decimal line, bytes; absent: no stored limit
//
// set with SetMaxSize (`kcache prune --max-size`). Where it is set, a
// process's limit is the larger of it and the process's MaxSize: a
// process's setting can raise the limit for what it evicts, never lower
// it. Where it is not, each process's MaxSize applies as before.
const maxSizeName = "max-size"

// storedMaxSizeCheck is how often a long-running process reads the stored
// limit again: a change by `kcache prune --max-size` reaches it within a
// minute, at the cost of one small read per minute of writes.
const storedMaxSizeCheck = time.Minute

// StoredMaxSize returns the limit kept in the cache's root, and whether
// there is one.
func (s *Store) StoredMaxSize() (int64, bool) {
	b, err := readSmallFile(filepath.Join(s.root, maxSizeName))
	if err != nil {
		return 0, false
	}
	n, err := parseDecimal(b)
	return n, err == nil && n > 0
}

// SetMaxSize stores n as the cache's own limit; 0 removes it, so that each
// process's MaxSize applies again. The store's own limit follows at once;
// other processes' within storedMaxSizeCheck.
func (s *Store) SetMaxSize(ctx context.Context, n int64) error {
	path := filepath.Join(s.root, maxSizeName)
	var err error
	switch {
	case n < 0:
		return errors.New("disk: negative size limit")
	case n == 0:
		if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	default:
		err = s.modes.writeFile(s.root, path, formatDecimal(n), false, time.Time{}, nil)
	}
	if err != nil {
		return fmt.Errorf("disk: storing the size limit: %w", err)
	}
	s.refreshLimit(true)
	return ctx.Err()
}

// refreshLimit recomputes the store's limit from its MaxSize and the
// stored limit, reading the latter if storedMaxSizeCheck has passed since
// the last read or force is set.
func (s *Store) refreshLimit(force bool) {
	now := time.Now().UnixNano()
	last := s.limitRead.Load()
	if !force && last != 0 && now-last < int64(storedMaxSizeCheck) {
		return
	}
	if !s.limitRead.CompareAndSwap(last, now) && !force {
		return
	}
	limit := s.opts.MaxSize
	if stored, ok := s.StoredMaxSize(); ok && limit > 0 && stored > limit {
		limit = stored
	}
	s.limit.Store(limit)
}

// maxSize is the limit this process evicts to: its MaxSize, raised to the
// stored limit (see maxSizeName). 0 means no limit.
func (s *Store) maxSize() int64 { return s.limit.Load() }
