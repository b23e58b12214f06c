// Package kcache is a cache of JIT-compiled device code. It holds what
// every backend and every tier share: the key that says what a build
// depends on (Key, its canonical encoding and Digests), the configuration
// read from KCACHE_* variables (Config), the interface a binary tier
// implements (Store, and Locker for cross-process single flight), and
// Cache, which looks a key up through the binary tiers in order and builds
// each missing entry once, however many callers ask for it.
//
// It must know no backend and no tier. OpenCL and CUDA (packages opencl
// and cuda, and the OpenCL layer) make the keys and call Cache; the disk
// and remote tiers (packages disk and redis) implement Store; package
// tiers composes them. Within the module it imports only internal/flight
// (one build per key) and objcache (whose out-of-memory and transient
// errors it re-exports), neither of which knows a device or a tier.
package kcache
