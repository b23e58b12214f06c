package kcache

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// A Cache also keeps the dependency records of package deps (a scan's
// every stat and header digest, so that a new process can check a
// source's headers by stat instead of reading them). They are entries
// of their own kind in the machine's tiers that processes share
// (OutcomeDisk, with a Store that is a Locker, as the directory store
// is), never in the remote one: a record holds inode and device numbers,
// which mean nothing on another machine, and a store of one process
// would only hold what the scanner's memory already does. As entries
// they share the binaries' integrity checks, crash safety and eviction.

// recordCompiler names the compiler of a record's key: no compiler's
// name, so a record's key can never equal a build's.
const recordCompiler = "kcache/deps-record"

// recordKey returns the key a dependency record is stored under.
func recordKey(id Digest) *Key {
	return &Key{
		Compiler: Compiler{Name: recordCompiler},
		Image:    Image{Format: recordCompiler, Source: id[:]},
	}
}

// recordTemplate is the record key of the zero id, prepared, and where
// the id's bytes lie in its encoding. Every record key differs from it
// only there: its device, compiler, specialization and options are the
// same, so only its image's digest and the key's own need computing
// (preparedRecordKey). A new process looks up a record for each source
// it builds, with caches cold: three digests fewer there.
var recordTemplate = sync.OnceValue(func() (t struct {
	enc     []byte
	digests Digests
	image   [2]int // the image component's bounds in enc
	idAt    int    // where the id's bytes start in enc
}) {
	k := recordKey(Digest{})
	var bounds [5]int
	t.enc, bounds = k.canonical().encode()
	t.digests = k.Prepare().digests
	t.image = [2]int{bounds[1], bounds[2]}
	// The image is its format (a length and the bytes), then its source,
	// the id (a length, one byte for 32, and the bytes).
	e := encoder{}
	e.str(k.Image.Format)
	e.uvarint(uint64(len(Digest{})))
	t.idAt = bounds[1] + len(e.buf)
	return t
})

// preparedRecordKey returns recordKey(id).Prepare(), computing only what
// depends on id.
func preparedRecordKey(id Digest) *Prepared {
	t := recordTemplate()
	enc := slices.Clone(t.enc)
	copy(enc[t.idAt:], id[:])
	p := &Prepared{key: recordKey(id), enc: enc, digests: t.digests}
	// The component's digest as componentInto computes it, from one
	// buffer on the stack: the image of a record key is some 60 bytes.
	var buf [128]byte
	e := encoder{buf: buf[:0]}
	e.str(tagImage)
	e.uvarint(FormatVersion)
	e.buf = append(e.buf, enc[t.image[0]:t.image[1]]...)
	p.digests.Image = sha256.Sum256(e.buf)
	p.digests.Key = p.digests.sumKey()
	return p
}

// LoadRecord returns the dependency record stored under id in the
// cache's local tiers (it implements deps.RecordStore). It returns an
// error wrapping ErrMiss when none has it.
func (c *Cache) LoadRecord(ctx context.Context, id Digest) ([]byte, error) {
	var p *Prepared
	for _, t := range c.tiers {
		if !keepsRecords(t) {
			continue
		}
		if p == nil {
			p = preparedRecordKey(id)
		}
		if e, err := getFrom(ctx, t.Store, p); err == nil {
			return e.Binary, nil
		}
	}
	return nil, fmt.Errorf("kcache: dependency record %s: %w", id, ErrMiss)
}

// StoreRecord stores a dependency record under id in the cache's local
// tiers, replacing the one there (a store keeps the first entry of a
// key, and a record is rewritten when the files it lists change).
func (c *Cache) StoreRecord(ctx context.Context, id Digest, record []byte) error {
	key := recordKey(id)
	var errs []error
	for _, t := range c.recordTiers() {
		// A failed delete leaves the old record, which is checked by
		// stat like any other; the Put then keeps it.
		_ = t.Store.Delete(ctx, key)
		if err := t.Store.Put(ctx, key, Entry{Binary: record}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// recordTiers returns the tiers that keep dependency records.
func (c *Cache) recordTiers() []Tier {
	var out []Tier
	for _, t := range c.tiers {
		if keepsRecords(t) {
			out = append(out, t)
		}
	}
	return out
}

// keepsRecords reports whether tier t keeps dependency records.
func keepsRecords(t Tier) bool {
	_, shared := t.Store.(Locker)
	return shared && t.Kind == OutcomeDisk
}

// IsDependencyRecord reports whether k is the key of a dependency record,
// not of a build: tools that list or count binaries leave such entries
// out.
func IsDependencyRecord(k *Key) bool { return k.Compiler.Name == recordCompiler }
