package objcache

import (
	"errors"

	"github.com/kcache/kcache/internal/flight"
)

// ErrOutOfMemory marks a build that failed because the device or host ran
// out of memory. A builder returns an error that wraps it (errors.Is); the
// cache then evicts every entry, releasing what it can, and retries that
// build once.
var ErrOutOfMemory = errors.New("out of memory")

// Transient marks err as not a property of the input: a flaky driver, an
// interrupted I/O, a lost connection. A transient failure is returned to the
// callers waiting on that build, but not cached: the next caller builds
// again. Transient(nil) is nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err}
}

// IsTransient reports whether err, or any error it wraps, was marked by
// Transient.
func IsTransient(err error) bool {
	var t *transientError
	return errors.As(err, &t)
}

type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// ErrClosed is returned by GetOrBuild once the cache is closed, wrapped
// around the build's own error for the callers of a build that Close
// cancelled.
var ErrClosed = errors.New("objcache: closed")

// ErrBuildPanic is wrapped by the error that callers get when their builder
// panicked. The panic is recovered so that it neither crashes the process
// nor leaves waiters hanging; the error carries the panic value (wrapped, if
// it is an error) and the builder's stack, and it is logged to
// Options.Logger. Like a Transient error it is not cached: the next caller
// builds again.
var ErrBuildPanic = flight.ErrPanic
