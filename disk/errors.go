package disk

import "errors"

// ErrNoDir is returned by Open when no cache directory is configured: the
// environment named none and the caller gave none. The caller runs without
// a persistent tier.
var ErrNoDir = errors.New("disk: no cache directory configured")

// ErrUnsafeDir is returned by Open for a cache directory that another user
// owns or that group or others may write. Such a directory is never read:
// whoever can write it could plant a binary the device would run, so it is
// refused the way ssh refuses a private key others can read.
var ErrUnsafeDir = errors.New("disk: unsafe cache directory")

// ErrLockTimeout is returned, wrapped, when a bounded lock wait runs out:
// Lock after Options.BuildWait, Put after Options.LockTimeout. The caller
// goes on without the lock: it builds anyway, or skips caching the binary.
var ErrLockTimeout = errors.New("disk: lock wait timed out")

// ErrCollision is returned by Put when every slot of a key's directory holds
// a different key. With 128-bit names per component this needs a forged or
// damaged directory; the binary is simply not cached.
var ErrCollision = errors.New("disk: too many keys share one directory")

// ErrDamaged marks, in Info.Err and Problem.Err, an entry whose record or
// binary fails a check: it is never served, and Verify with repair removes it.
var ErrDamaged = errors.New("disk: damaged entry")

// ErrIncomplete marks, in Info.Err and Problem.Err, what an interrupted write
// left behind: a binary without its record, or a temporary file. It is not
// damage (a crash at that instant leaves exactly this) and is never served.
var ErrIncomplete = errors.New("disk: incomplete entry")

// ErrUnreadable marks, in Problem.Err, a directory of the cache that could
// not be listed: one another user left (a run under sudo), or a file where
// a directory should be; and, in Info.Err too, an entry whose file this
// user may not read (another member's, in a shared cache). Passes skip it
// and evict the rest; Verify reports it, and removing it is left to
// whoever owns it.
var ErrUnreadable = errors.New("disk: unreadable part of the cache")

// errBusy says another process holds the lock a pass or step needs.
var errBusy = errors.New("disk: another process is at work")
