package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
)

// The size file, size.txt in the version directory, holds the total bytes of
// every .src and .bin file as a decimal number and a newline, like the SYCL
// runtime's cache_size.txt: a Put learns whether the cache is over its limit
// without walking the tree. It is changed in place under its own flock: read,
// add, write, truncate. A writer killed between the write and the truncate
// leaves digits followed by leftovers, which do not parse; a total that is
// missing, unparsable or implausible is rebuilt by a walk. Drift (a writer
// killed between its commit and its update) is corrected by every eviction
// and maintenance pass, which walk the tree anyway.

// maxDecimalLen is the longest decimal line accepted: 19 digits hold any
// int64, plus the newline.
const maxDecimalLen = 20

// parseDecimal parses what formatDecimal writes: a non-negative decimal
// number without sign or leading zeros, then a newline, nothing else. It is
// strict so that a torn write reads as damage, never as another number.
func parseDecimal(b []byte) (int64, error) {
	if len(b) < 2 || len(b) > maxDecimalLen || b[len(b)-1] != '\n' {
		return 0, errBadDecimal
	}
	digits := b[:len(b)-1]
	if digits[0] == '0' && len(digits) > 1 {
		return 0, errBadDecimal
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, errBadDecimal
		}
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return 0, errBadDecimal
	}
	return n, nil
}

var errBadDecimal = errors.New("disk: not a decimal line")

// formatDecimal returns the line parseDecimal reads for n, which must not be
// negative.
func formatDecimal(n int64) []byte {
	return append(strconv.AppendInt(nil, n, 10), '\n')
}

// Size returns the total bytes of the cache's records and binaries, as the
// size file says, rebuilding it by a walk when it is missing or not
// plausible. On a cache it cannot write, it walks.
func (s *Store) Size(ctx context.Context) (int64, error) {
	n, err := s.updateTotal(ctx, func(cur int64, known bool) (int64, error) {
		if known {
			return cur, nil
		}
		return s.walkTotal(ctx)
	})
	if err != nil {
		return s.walkTotal(ctx)
	}
	return n, nil
}

// addSize adds delta to the total and returns the new total. It is best
// effort: when the size file cannot be locked or written, the total drifts
// until the next pass corrects it, and ok is false.
func (s *Store) addSize(ctx context.Context, delta int64) (total int64, ok bool) {
	n, err := s.updateTotal(ctx, func(cur int64, known bool) (int64, error) {
		if known && cur+delta >= 0 {
			return cur + delta, nil
		}
		// The walk sees the entry just written: delta is already in it.
		return s.walkTotal(ctx)
	})
	if err != nil {
		s.log.Debug("kcache: cache size not updated", "err", err)
		return 0, false
	}
	return n, true
}

// readSize reads the total under the size file's lock without changing it;
// known is false when there is no plausible total.
func (s *Store) readSize(ctx context.Context) (total int64, known bool) {
	_, err := s.updateTotal(ctx, func(cur int64, ok bool) (int64, error) {
		total, known = cur, ok
		return 0, errKeep
	})
	if err != nil && !errors.Is(err, errKeep) {
		return 0, false
	}
	return total, known
}

// errKeep tells updateTotal to leave the file as it is.
var errKeep = errors.New("keep")

// updateTotal runs update on the current total under the size file's lock
// and stores what it returns. known is false when the file is missing,
// unparsable or implausible.
func (s *Store) updateTotal(ctx context.Context, update func(cur int64, known bool) (int64, error)) (int64, error) {
	f, err := s.lockFile(ctx, sizeName, s.opts.LockTimeout)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	cur, err := readDecimal(f)
	known := err == nil && s.plausible(cur)
	next, err := update(cur, known)
	if err != nil {
		return 0, err
	}
	if !known || next != cur {
		if err := writeDecimal(f, next); err != nil {
			return 0, err
		}
	}
	return next, nil
}

// plausible reports whether a total could be true: no larger than the file
// system holding the cache. (parseDecimal already refuses negatives.)
func (s *Store) plausible(n int64) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return true // cannot tell; the next pass corrects it anyway
	}
	return uint64(n) <= st.Blocks*uint64(st.Bsize)
}

// readDecimal reads a decimal line from the start of f.
func readDecimal(f *os.File) (int64, error) {
	buf := make([]byte, maxDecimalLen+1)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return parseDecimal(buf[:n])
}

// writeDecimal replaces f's content with a decimal line.
func writeDecimal(f *os.File, n int64) error {
	if n < 0 {
		return fmt.Errorf("disk: negative total %d", n)
	}
	b := formatDecimal(n)
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(b)))
}
