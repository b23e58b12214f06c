package disk

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// Summary is what the cache holds: the figures `kcache stats` shows.
type Summary struct {
	Entries int     // sound entries
	Bytes   int64   // bytes of sound entries: records and binaries
	Damaged int     // slots whose record is missing, damaged or misplaced
	MaxSize int64   // the size that triggers eviction; 0 when unlimited
	Groups  []Group // entries per device and compiler, largest first
}

// Group counts the entries built for one device by one compiler.
type Group struct {
	Device   string // device name and driver version
	Compiler string // compiler name and version
	Entries  int
	Bytes    int64
}

// Summarize walks the cache and sums its entries per device and compiler.
// It reads every record but no binary.
func (s *Store) Summarize(ctx context.Context) (Summary, error) {
	sum := Summary{MaxSize: s.MaxSize()}
	groups := map[[2]string]*Group{}
	var mu sync.Mutex // protects sum and groups
	err := s.WalkParallel(ctx, func(in Info) error {
		mu.Lock()
		defer mu.Unlock()
		if in.Err != nil {
			sum.Damaged++
			return nil
		}
		sum.Entries++
		sum.Bytes += in.Size
		id := [2]string{DeviceLabel(in.Key), CompilerLabel(in.Key)}
		g := groups[id]
		if g == nil {
			g = &Group{Device: id[0], Compiler: id[1]}
			groups[id] = g
		}
		g.Entries++
		g.Bytes += in.Size
		return nil
	})
	for _, g := range groups {
		sum.Groups = append(sum.Groups, *g)
	}
	slices.SortFunc(sum.Groups, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Compiler, b.Compiler))
	})
	return sum, err
}

// MaxSize returns the size above which the store evicts; 0 when eviction
// by size is off.
func (s *Store) MaxSize() int64 {
	if !s.limited() {
		return 0
	}
	return s.opts.MaxSize
}
