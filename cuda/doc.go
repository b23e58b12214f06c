// Package cuda binds the CUDA driver API (libcuda.so.1) and NVRTC
// (libnvrtc.so.*), loaded at run time through purego, so programs built
// with CGO_ENABLED=0 use a GPU where there is one and get an error naming
// what is missing where there is none; and it caches modules compiled by
// NVRTC through kcache's tiers (Cache).
//
// A driver context is current per OS thread. Every call in this package
// that needs a context makes it current itself, on a locked OS thread, for
// the duration of the call: the API is safe from any goroutine.
//
// Driver entry points are versioned (cuMemAlloc_v2, ...). They are
// resolved through cuGetProcAddress at the ABI of one CUDA release
// (abiVersion), whose signatures this package's declarations match, so a
// newer driver that changed an entry point's default version still hands
// back the one this package was written for.
//
// Its Cache keeps modules through the object tier (objcache) and the
// binary tiers it is handed (a *kcache.Cache): it knows no tier's
// implementation (disk, redis, tiers) and nothing of OpenCL. Within the
// module it imports the root package, deps, objcache, internal/keyparts
// and cuda/compileserver (the client it asks before compiling itself).
package cuda
