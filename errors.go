package kcache

import (
	"errors"
	"fmt"

	"github.com/kcache/kcache/objcache"
)

// ErrMiss is returned by a Store that has no entry for a key. Every
// malformed, truncated, foreign or unverifiable entry is reported as a miss
// too (wrapped, so errors.Is(err, ErrMiss) holds): to a caller, an entry it
// cannot trust is an entry it does not have.
var ErrMiss = errors.New("kcache: miss")

// ErrOutOfMemory marks a build that ran out of memory; see objcache.ErrOutOfMemory.
var ErrOutOfMemory = objcache.ErrOutOfMemory

// Transient marks err as a failure that must not be cached: the next caller
// builds again. See objcache.Transient.
func Transient(err error) error { return objcache.Transient(err) }

// IsTransient reports whether err was marked by Transient.
func IsTransient(err error) bool { return objcache.IsTransient(err) }

// DecodeError reports bytes that do not decode: a damaged or foreign file, a
// truncated record. It wraps ErrMiss, since such an entry is never used.
type DecodeError struct {
	What   string // what was being decoded: "key", "entry", ...
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("kcache: malformed %s: %s", e.What, e.Reason)
}

// Unwrap makes a DecodeError a miss.
func (e *DecodeError) Unwrap() error { return ErrMiss }

// ErrBuildPanic is wrapped by the error that callers get when a builder
// panicked; see objcache.ErrBuildPanic. The panic is recovered, logged with
// its stack and returned to every caller of that build; nothing is stored,
// so the next caller builds again.
var ErrBuildPanic = objcache.ErrBuildPanic

// ErrLastBuildFailed is wrapped by a Locker's Lock error when the key's
// last builder, in another process, stored nothing (its build failed, or
// its binary was not to be stored): the caller builds at once, holding no lock,
// rather than take the lock and make the next waiter wait for its build in
// turn. The Cache then releases the locks it took before this one, so that
// the processes waiting on those build at once too.
var ErrLastBuildFailed = errors.New("kcache: the key's last builder left no entry")
