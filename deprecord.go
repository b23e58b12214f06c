package kcache

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
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

// A record key's encoding and digests are known but for its id: every
// record key equals the zero id's but for the id's 32 bytes, and its
// device, compiler, specialization and options are the same. So
// LoadRecord patches the id into a copy of that encoding, takes the three
// component digests that do not depend on it from constants, and computes
// the image's digest and the key's (preparedRecordKey). A new process
// looks up a record for each source it builds, with caches cold: its first
// record key computed the template with a full Prepare, and each one made
// four allocations. TestRecordKeyTemplate derives every constant here from
// recordKey and Prepare, so that a change of the encoding fails it.
const (
	// recordKeyEnc is the encoding of recordKey(Digest{}).
	recordKeyEnc = "KCKEY\x02\x00\x00\x00\x00\x12kcache/deps-record\x00\x00\x00\x00 \x00\x00\x00\x00\x00\x00" +
		"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x12kcache/deps-r" +
		"ecord \x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
		"\x00\x00\x00"
	// recordImageAt and recordImageEnd bound the image component in
	// recordKeyEnc; recordIDAt is where the id's bytes start in it.
	recordImageAt, recordImageEnd = 66, 119
	recordIDAt                    = 86
)

// recordDigests are the component digests of recordKey(Digest{}) that do
// not depend on the id.
var recordDigests = Digests{
	Device:  Digest{0x06, 0x2a, 0xb8, 0xc3, 0x31, 0xb3, 0x0a, 0xb5, 0x4b, 0x30, 0x0f, 0x6c, 0x1d, 0x7c, 0xba, 0x11, 0x5e, 0x0c, 0xec, 0x64, 0x56, 0x11, 0x66, 0x33, 0x1a, 0x09, 0x3b, 0x0d, 0xb2, 0x5e, 0x54, 0xa8},
	Spec:    Digest{0x03, 0x51, 0xcd, 0x5b, 0x63, 0xfc, 0x8c, 0x49, 0x38, 0xa1, 0x9b, 0x33, 0x33, 0x6c, 0xe5, 0x3d, 0xd0, 0x26, 0x93, 0x5e, 0x13, 0xf3, 0x42, 0x64, 0x39, 0xf4, 0x76, 0x5f, 0xf4, 0xb6, 0xc6, 0xbf},
	Options: Digest{0x26, 0xcd, 0xe7, 0xed, 0xcb, 0x62, 0x60, 0xf3, 0x1e, 0x27, 0xdd, 0x93, 0x9a, 0x4b, 0xbe, 0x87, 0x63, 0xd6, 0x7f, 0x6f, 0x0d, 0x42, 0xbd, 0x8f, 0x56, 0x9c, 0x57, 0xa1, 0x6f, 0xdd, 0x87, 0x16},
}

// preparedKeyOfRecord is a record key prepared, in one allocation.
type preparedKeyOfRecord struct {
	p   Prepared
	k   Key
	enc [len(recordKeyEnc)]byte
}

// preparedRecordKey returns recordKey(id).Prepare(), computing only what
// depends on id.
func preparedRecordKey(id Digest) *Prepared {
	r := new(preparedKeyOfRecord)
	copy(r.enc[:], recordKeyEnc)
	idb := r.enc[recordIDAt : recordIDAt+len(id)]
	copy(idb, id[:])
	// The key's source is the id's bytes in the encoding: both are
	// immutable once returned.
	r.k = Key{Compiler: Compiler{Name: recordCompiler}, Image: Image{Format: recordCompiler, Source: idb}}
	r.p = Prepared{key: &r.k, enc: r.enc[:], digests: recordDigests}
	// The component's digest as componentInto computes it, from one
	// buffer on the stack: the image of a record key is some 60 bytes.
	var buf [128]byte
	e := encoder{buf: buf[:0]}
	e.str(tagImage)
	e.uvarint(FormatVersion)
	e.buf = append(e.buf, r.enc[recordImageAt:recordImageEnd]...)
	r.p.digests.Image = sha256.Sum256(e.buf)
	r.p.digests.Key = r.p.digests.sumKey()
	return &r.p
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

// DeleteRecord deletes the record stored under id from the cache's local
// tiers, for a caller that found it unusable (one that decodes but whose
// binary the driver refuses would otherwise be read by every process).
func (c *Cache) DeleteRecord(ctx context.Context, id Digest) error {
	key := recordKey(id)
	var errs []error
	for _, t := range c.recordTiers() {
		if err := t.Store.Delete(ctx, key); err != nil {
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
