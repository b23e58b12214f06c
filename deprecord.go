package kcache

import (
	"context"
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

// LoadRecord returns the dependency record stored under id in the
// cache's local tiers (it implements deps.RecordStore). It returns an
// error wrapping ErrMiss when none has it.
func (c *Cache) LoadRecord(ctx context.Context, id Digest) ([]byte, error) {
	for _, t := range c.recordTiers() {
		if e, err := t.Store.Get(ctx, recordKey(id)); err == nil {
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
		if _, shared := t.Store.(Locker); shared && t.Kind == OutcomeDisk {
			out = append(out, t)
		}
	}
	return out
}

// IsDependencyRecord reports whether k is the key of a dependency record,
// not of a build: tools that list or count binaries leave such entries
// out.
func IsDependencyRecord(k *Key) bool { return k.Compiler.Name == recordCompiler }
