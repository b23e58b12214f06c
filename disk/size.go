package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// The cache's total, the bytes of every committed entry (a record and its
// binary), is kept per shard in shards/size (see shard.go): a writer adds
// what it wrote under the file's flock, and learns the total without
// walking the tree. A total that is missing or unreadable is unknown, and
// the background work recounts it (background.go); a writer never walks.

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
// size file says. Where it does not know a shard's total, it recounts the
// shards it must, as the maintenance pass does; on a cache it cannot
// write, it walks.
func (s *Store) Size(ctx context.Context) (int64, error) {
	t := s.readTotals(ctx)
	if total, unknown := t.total(); unknown == 0 {
		return total, nil
	}
	if err := s.recount(ctx); err != nil {
		return s.walkTotal(ctx)
	}
	total, unknown := s.readTotals(ctx).total()
	if unknown > 0 {
		return s.walkTotal(ctx)
	}
	return total, nil
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
