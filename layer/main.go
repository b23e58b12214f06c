// Command kcache-layer is the kcache OpenCL layer, built as a shared
// library (go build -buildmode=c-shared -o libkcache-layer.so) and loaded by
// the OpenCL ICD loader for an unmodified application:
//
//	OPENCL_LAYERS=/path/libkcache-layer.so app
//
// Programs the application creates from source and builds with
// clBuildProgram come from kcache's tiers when they were built before, by
// this process or any other; every other call passes through to the
// driver. KCACHE_* variables configure it as they configure the library.
//
// The application keeps one handle per program for its whole life: the
// layer gives it a handle of its own and forwards each call to the
// driver's program behind it, which is the program made from source, or
// after a cache hit a program made from the cached binary (see layer.c).
//
// On PoCL, where reading a program's binary is a compile, the layer does
// not read it in the application's process: it writes a build order and
// starts the background worker, `kcache layer-worker`, which builds and
// stores the program in a process of its own (background.go,
// internal/layerstore, docs/layer.md).
//
// It knows no application: every call it does not intercept goes to the
// driver untouched, and when in doubt it calls through. It uses no binding
// of package opencl (it calls the driver through the loader's dispatch
// table, in C). Within the module it imports the root package, deps,
// disk (its one binary tier), internal/keyparts and internal/binread: the
// rules package opencl keys and reads programs by, so that the layer and
// the binding agree on every key; and internal/layerstore, what it shares
// with its worker.
package main

// main is never run: the package is a shared library.
func main() {}
