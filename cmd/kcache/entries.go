package main

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/opencl"
)

// internal reports whether an entry is the cache's own bookkeeping rather
// than a program: the claim a process leaves beside an entry it rebuilds
// (opencl.FormatRebuildClaim), and the dependency records that let a new
// process compute a key without reading headers (kcache.IsDependencyRecord).
// Such entries are neither listed nor counted.
func internal(in *disk.Info) bool {
	return in.Key != nil && internalKey(in.Key)
}

// internalKey reports whether k is the key of such an entry.
func internalKey(k *kcache.Key) bool {
	return k.Image.Format == opencl.FormatRebuildClaim || kcache.IsDependencyRecord(k)
}

// walkEntries calls fn, one call at a time, for every sound entry of st
// that is a program, and returns how many slots are damaged. It is the one
// definition of an entry and of a damaged one that stats and ls share: a
// slot is damaged when its record is missing or does not decode, sits
// where its key does not place it, or its binary is missing or not of the
// recorded length. Binaries are not read: verify also checks their
// checksums, and counts leftovers of interrupted writes, so it may find
// more.
func walkEntries(ctx context.Context, st *disk.Store, fn func(*disk.Info)) (damaged int, err error) {
	var mu sync.Mutex // serialises fn and protects damaged
	err = st.WalkParallel(ctx, func(in disk.Info) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(in.Err, disk.ErrUnreadable):
			// Another member's entry in a shared cache, unreadable to
			// this user: neither an entry nor damage to it.
		case in.Err != nil:
			damaged++
		case !internal(&in):
			fn(&in)
		}
		return nil
	})
	return damaged, err
}

// summarize counts st's entries, their bytes and the damaged slots, and
// groups the entries per device and compiler, largest first, as ls would
// list them.
func summarize(ctx context.Context, st *disk.Store) (disk.Summary, error) {
	sum := disk.Summary{MaxSize: st.MaxSize()}
	groups := map[[2]string]*disk.Group{}
	damaged, err := walkEntries(ctx, st, func(in *disk.Info) {
		sum.Entries++
		sum.Bytes += in.Size
		id := [2]string{disk.DeviceLabel(in.Key), disk.CompilerLabel(in.Key)}
		g := groups[id]
		if g == nil {
			g = &disk.Group{Device: id[0], Compiler: id[1]}
			groups[id] = g
		}
		g.Entries++
		g.Bytes += in.Size
	})
	sum.Damaged = damaged
	for _, g := range groups {
		sum.Groups = append(sum.Groups, *g)
	}
	slices.SortFunc(sum.Groups, func(a, b disk.Group) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Compiler, b.Compiler))
	})
	return sum, err
}
