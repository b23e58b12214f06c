// Package opencl is a binding over the OpenCL ICD loader (libOpenCL.so.1),
// loaded at run time with purego, so programs using it build with
// CGO_ENABLED=0 and run on machines without OpenCL, where Load reports
// ErrNoRuntime and names the packages to install.
//
// # Ownership
//
// Every *Context, *Queue, *Program, *Kernel, *Buffer and *Event owns exactly
// one OpenCL reference and gives it back in Release. Release is idempotent,
// but like Close it must not race with other calls on the same wrapper.
// Program.Retain returns a second wrapper with its own reference. Platform
// and Device are plain values: root devices are never released. There are
// no finalizers: a cache decides when objects die, not the collector.
//
// # Threading
//
// OpenCL calls are thread-safe except clSetKernelArg on one kernel, and
// OpenCL has no per-thread current context, so no goroutine is locked to an
// OS thread. A Kernel serialises its own argument setting and enqueueing,
// but arguments are per kernel object: give each goroutine its own Kernel.
// Blocking calls (Build, Finish, Wait, Read, Write) block one OS thread in
// C; the Go scheduler keeps running other goroutines.
//
// # Go memory
//
// The C side only sees Go memory for the duration of a call: reads and
// writes are blocking, buffers are initialised by copy (CL_MEM_USE_HOST_PTR
// is not offered), and the arrays of pointers that some calls take (program
// sources and binaries, header names) point at memory pinned with
// runtime.Pinner for that call.
//
// # What it does not know
//
// Its Cache (cache.go) keeps programs and kernels through the object tier
// (objcache) and the binary tiers it is handed (a *kcache.Cache): it knows
// no tier's implementation (disk, redis, tiers) and nothing of CUDA. Within
// the module it imports the root package, deps (the source's
// dependencies), objcache, internal/keyparts (the device's part of the key)
// and internal/binread (reading binaries safely).
package opencl
