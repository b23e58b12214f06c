package cuda

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"sync"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/wire"
)

// A process's first request of a source reads its direct record (direct.go):
// one file, which on the H100 host cost a small kernel's request about as
// much as the floor's whole read of its binary. The processes of one
// application request the same modules, in about the same order, soon
// after they start; so a cache keeps, per identity (device, compiler,
// environment), the list of the direct records its processes
// wrote most recently, and a new Cache reads those records on a goroutine
// of its own while the application sets up. A request whose record was
// read ahead takes it from memory; one that comes first reads it as
// before. What was read ahead is checked exactly as what is read on
// request (the records inside by stat, then the binary's load): an old
// copy can only be stale, never wrong, and a stale one goes the usual way.
// Nothing is written on a hit: the list changes when a direct record is
// written, once per source and identity.

// prefetchVersion is the version of the list's encoding.
const prefetchVersion = 1

// prefetchMagic starts every list.
const prefetchMagic = "KCHL"

// Bounds of what a Cache reads ahead: the list keeps the names of the
// last maxPrefetchNames direct records written, and a Cache holds at most
// DefaultPrefetchBytes of their bytes (CacheOptions.PrefetchBytes).
const (
	maxPrefetchNames     = 256
	DefaultPrefetchBytes = 32 << 20
)

// prefetched holds the direct records read ahead, by name, until a
// request takes each (once: the scanner's memo and the key memo serve the
// source's later requests).
type prefetched struct {
	mu      sync.Mutex
	records map[kcache.Digest][]byte // guarded by mu
}

// take returns the record read ahead under id, and forgets it.
func (p *prefetched) take(id kcache.Digest) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	data, ok := p.records[id]
	if ok {
		delete(p.records, id)
	}
	return data, ok
}

// put keeps data as the record read ahead under id, unless a request has
// taken everything already.
func (p *prefetched) put(id kcache.Digest, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.records == nil {
		p.records = map[kcache.Digest][]byte{}
	}
	p.records[id] = data
}

// prefetchListID names the list of this cache's identity. The list only
// says which records to read ahead, each checked as on request, so it is
// named by the identity without the digest of the compiler's files, which
// a new process finds on a goroutine of its own (compilerDigest): the
// read ahead starts at once, not after that search. Processes whose
// compiler files differ and whose versions agree share a list, and read
// ahead records they will not ask for, within the budget.
func (c *Cache) prefetchListID() kcache.Digest {
	d := c.identityDigest(c.id.comp) // without the files' digest
	b := append([]byte("kcache/cuda-direct-recent\x00"), d[:]...)
	return sha256.Sum256(append(b, c.baseDir...))
}

// prefetch reads the direct records the list of this cache's identity
// names, most recent first, up to budget bytes. It runs on a goroutine of
// its own from NewCache; a failure reads nothing more, costing requests a
// file read each.
func (c *Cache) prefetch(ctx context.Context, budget int) {
	data, err := c.bins.LoadRecord(ctx, c.prefetchListID())
	if err != nil {
		return
	}
	names, err := decodePrefetchList(data)
	if err != nil {
		return
	}
	for _, id := range names {
		rec, err := c.bins.LoadRecord(ctx, id)
		if err != nil {
			continue
		}
		if budget -= len(rec); budget < 0 {
			return
		}
		c.ahead.put(id, rec)
	}
}

// rememberDirect puts id first in the list of this cache's identity. The
// list is read, changed and written again: two processes that write at
// once may lose one name, which costs its source a file read in the next
// process, nothing more.
func (c *Cache) rememberDirect(ctx context.Context, id kcache.Digest) error {
	listID := c.prefetchListID()
	var names []kcache.Digest
	if data, err := c.bins.LoadRecord(ctx, listID); err == nil {
		names, _ = decodePrefetchList(data) // a damaged list starts again
	}
	names = slices.DeleteFunc(names, func(d kcache.Digest) bool { return d == id })
	names = append([]kcache.Digest{id}, names...)
	if len(names) > maxPrefetchNames {
		names = names[:maxPrefetchNames]
	}
	return c.bins.StoreRecord(ctx, listID, encodePrefetchList(names))
}

// encodePrefetchList writes names: the magic, the version, the count, the
// names. The disk tier's checksum covers it, as every entry.
func encodePrefetchList(names []kcache.Digest) []byte {
	b := make([]byte, 0, len(prefetchMagic)+12+len(names)*len(kcache.Digest{}))
	b = append(b, prefetchMagic...)
	b = binary.AppendUvarint(b, prefetchVersion)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		b = append(b, n[:]...)
	}
	return b
}

// decodePrefetchList reads a list encodePrefetchList wrote.
func decodePrefetchList(data []byte) ([]kcache.Digest, error) {
	if len(data) < len(prefetchMagic) || string(data[:len(prefetchMagic)]) != prefetchMagic {
		return nil, errors.New("cuda: not a list of direct records")
	}
	d := wire.NewDecoder(data[len(prefetchMagic):])
	if v := d.Uvarint(); d.OK && v != prefetchVersion {
		return nil, errors.New("cuda: a list of direct records of another version")
	}
	n := d.Count(len(kcache.Digest{}))
	if n > maxPrefetchNames {
		return nil, errors.New("cuda: a list of too many direct records")
	}
	names := make([]kcache.Digest, n)
	for i := range names {
		copy(names[i][:], d.Fixed(len(names[i])))
	}
	if !d.OK || len(d.Buf) != 0 {
		return nil, errors.New("cuda: damaged list of direct records")
	}
	return names, nil
}
