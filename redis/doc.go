// Package redis is kcache's remote tier: built binaries kept in Redis and
// shared by a fleet of machines, standalone or Cluster, with fleet-wide
// single-flight builds.
//
// # Values
//
// A key's value is one Redis string (value.go has the layout): the format
// version, the key's digest and full record, the binary's length and
// SHA-256, the binary (zstd-compressed where that saves an eighth), and,
// when the fleet shares a secret (KCACHE_REMOTE_SECRET), an HMAC-SHA256
// over all of it. A reader checks everything before it uses a byte; a
// value that fails is a miss wrapping kcache.ErrRejected, and the reader
// removes it if it is still the value stored (the secret derives the
// names, so a value under them that fails is damage or a forgery; see
// names.go). A key under a value's name that is no string is rejected and
// removed too; a lease no kcache client writes (no string, no expiry, a
// failure marker longer than kcache's) is replaced by the next asker.
//
// # Builds
//
// Store.Lock takes a key's build lease: SET NX PX with a random token,
// renewed while the build runs, deleted by its holder only (a script
// compares the token), expiring if the holder dies. Machines that miss the
// same key poll, bounded, until the value appears. kcache.Cache takes the
// disk tier's lock first, so one process per machine asks for the lease.
//
// # Writes
//
// Put queues the value and returns; two goroutines send queued values. The
// queue is bounded in entries and bytes and drops what does not fit. A
// lease is released only after its holder's write of the key is sent, so
// the machines waiting for it find the value. Close sends what is queued,
// within its context's deadline.
//
// # Faults
//
// Every lookup is bounded by Options.Timeout (100 ms by default); lease
// operations by five times that, since they come just before a build.
// Nothing is retried. After Options.Failures failures in a row the store
// is skipped for Options.Backoff, and the first time that happens it logs
// one warning; an operation its caller cancelled is no failure. Failures are reported in one line naming KCACHE_REMOTE
// (with the password hidden) and what to check.
//
// # What it does not know
//
// It knows no backend and no compiler (a value is opaque bytes under a
// kcache.Key) and no other tier: the disk tier's lock that comes first is
// kcache.Cache's doing. Within the module it imports only the root
// package.
package redis
