// Package objcache is kcache's object tier: a generic in-process cache of
// live runtime objects (OpenCL programs and kernels, CUDA modules and
// functions) per context, after the in-memory cache of the SYCL runtime's
// KernelProgramCache.
//
// # Single-flight builds
//
// Cache.GetOrBuild builds a missing object once, however many goroutines
// ask for it: the first inserts an entry in the building state (the spec's
// BuildResult) and runs the build on a goroutine of its own; the others wait
// for it. A waiter whose context ends leaves at once; the build is
// cancelled only when every waiter has left. A build error is kept and
// returned to later callers, so that a kernel with a compile error is not
// recompiled in a loop, except for the spec's "spurious" errors, which say
// nothing about the key: a panic, a cancelled build, an error marked
// Transient, a second out-of-memory. Those are returned to the waiters of
// that build and forgotten. A panic or runtime.Goexit in a builder never
// crashes the process or leaves waiters hanging (see internal/flight, the
// mechanism the binary tiers share). Kept errors are bounded by count and
// bytes, apart from the threshold, least recently used first (see
// DefaultMaxErrors for why). Cache.GetOrLoad first tries a load (an
// object read from a local binary tier) on the caller's goroutine, and
// starts the build on a goroutine of its own only when the load fails: a
// warm load then starts and wakes no goroutine.
//
// # Hits
//
// A hit takes no lock and allocates nothing. The key-to-entry map is an
// immutable snapshot behind an atomic pointer, replaced under a mutex on
// inserts and removals, which are rare since each insert follows a JIT
// compile (see index for how inserts stay cheap in large caches). An entry's
// state, reference counts (which double as its hit counter) and recency
// stamp are atomics in the entry itself, so hits on different entries write
// no shared memory; an entry hit from many cores at once spreads its
// reference counts over per-goroutine stripes (see refs).
//
// # Eviction
//
// With Options.Threshold set, an insert that takes the total size over it
// evicts least recently used entries, kept in an eviction list, until the
// total is back within it. Hits record recency lock-free with a stamp from
// an epoch counter that advances on inserts, and eviction reorders the list
// lazily (see evictionList). A builder that fails with ErrOutOfMemory makes
// the cache evict everything and try that build once more. Evicting or
// removing an entry drops its dependents too (see Cache.AddDependent), such
// as a program's kernels in another Cache.
//
// # Release
//
// GetOrBuild returns a counted Handle. Options.Release frees an object once
// the cache has dropped it and the last handle has been released: exactly
// once, whichever comes last.
//
// # What it does not know
//
// It is generic over its keys and objects and knows no kcache key, no
// binary tier and no backend: opencl and cuda instantiate it with their
// own. Within the module it imports only internal/flight.
package objcache
