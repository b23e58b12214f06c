package kcache

import (
	"context"
	"time"
)

// Entry is what a binary tier keeps for a key: the built binary and what it
// cost to build, so a later hit can report the time it saved.
type Entry struct {
	Binary    []byte
	BuildTime time.Duration
}

// Store is a binary tier: persistent storage of built binaries by key. The
// directory store (package disk) is the default; a user can bring their own
// (a database, an object store, a packed file), as onednn-style "blob" APIs
// allow.
//
// Get returns an error wrapping ErrMiss when it has no usable entry for key;
// an implementation must verify what it returns (full key match, checksum)
// and report anything it cannot verify as a miss. Implementations must be
// safe for concurrent use.
type Store interface {
	Get(ctx context.Context, key *Key) (Entry, error)
	Put(ctx context.Context, key *Key, e Entry) error
	Delete(ctx context.Context, key *Key) error
}

// Locker is implemented by stores shared between processes that can make
// other processes wait while one builds a key: cross-process single-flight.
// Lock blocks until the caller holds the key's build lock, ctx ends, or the
// store's own bounded wait runs out; on error the caller builds anyway
// (at once, releasing the locks it holds, for an error wrapping
// ErrLastBuildFailed).
// The returned unlock releases the lock; a lock must also be released by
// the operating system if its holder dies.
type Locker interface {
	Lock(ctx context.Context, key *Key) (unlock func(), err error)
}

// ErrRejected marks an entry a store found but refused to use because it
// failed an integrity or authenticity check (a checksum, a signature, the
// key it carries). It is a miss (errors.Is(err, ErrMiss) holds), and the
// Cache counts it in its tier's Rejected.
var ErrRejected error = rejectedError{}

type rejectedError struct{}

func (rejectedError) Error() string { return "kcache: entry rejected" }
func (rejectedError) Unwrap() error { return ErrMiss }
