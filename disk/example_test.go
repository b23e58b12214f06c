package disk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// The caller's protocol: look up, and on a miss take the key's build lock
// (waiting while another process builds it), look up again, and build
// only if the entry is still missing.
func Example() {
	dir, _ := os.MkdirTemp("", "kcache-example-")
	defer os.RemoveAll(dir)
	s, err := disk.Open(disk.Options{Dir: filepath.Join(dir, "cache"), MaxSize: 1 << 30})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	defer s.Close(ctx)
	key := &kcache.Key{
		Device:  kcache.Device{Platform: "Example", Name: "device", Version: "OpenCL 3.0", Driver: "1.0"},
		Image:   kcache.Image{Format: "opencl-c", Source: []byte("kernel void k(global int *p) { *p = 1; }")},
		Options: kcache.BuildOptions{Compile: "-cl-std=CL3.0"},
	}
	if _, err := s.Get(ctx, key); errors.Is(err, kcache.ErrMiss) {
		unlock, _ := s.Lock(ctx, key) // on error, build anyway
		if _, err := s.Get(ctx, key); err != nil {
			binary := []byte("device binary") // the JIT compiler's output
			if err := s.Put(ctx, key, kcache.Entry{Binary: binary, BuildTime: 40 * time.Millisecond}); err != nil {
				fmt.Println("not cached:", err) // warn and go on
			}
		}
		unlock()
	}
	e, err := s.Get(ctx, key)
	fmt.Printf("%s, built in %v, err=%v\n", e.Binary, e.BuildTime, err)
	// Output: device binary, built in 40ms, err=<nil>
}

// Export and Import carry an entry between caches as one verified blob.
func ExampleStore_Export() {
	dir, _ := os.MkdirTemp("", "kcache-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	a, _ := disk.Open(disk.Options{Dir: filepath.Join(dir, "a")})
	b, _ := disk.Open(disk.Options{Dir: filepath.Join(dir, "b")})
	defer a.Close(ctx)
	defer b.Close(ctx)
	key := &kcache.Key{Image: kcache.Image{Format: "ptx", Source: []byte(".version 8.0")}}
	a.Put(ctx, key, kcache.Entry{Binary: []byte("cubin")})

	blob, _ := a.Export(ctx, key)
	if err := b.Import(ctx, blob); err != nil {
		fmt.Println(err)
	}
	e, _ := b.Get(ctx, key)
	r, _ := b.Verify(ctx, false)
	fmt.Printf("%s; %d entry, %d damaged\n", e.Binary, r.Entries, r.Damaged)
	// Output: cubin; 1 entry, 0 damaged
}

// A short-lived process (a command-line run) gives the background work its
// Put started a bounded time before it exits. Whatever is left stays on
// disk for the next writer: skipping Close loses nothing.
func ExampleStore_Close() {
	dir, _ := os.MkdirTemp("", "kcache-example-")
	defer os.RemoveAll(dir)
	s, _ := disk.Open(disk.Options{Dir: filepath.Join(dir, "cache"), MaxSize: 1 << 20})
	key := &kcache.Key{Image: kcache.Image{Format: "ptx", Source: []byte(".version 8.0")}}
	if err := s.Put(context.Background(), key, kcache.Entry{Binary: []byte("cubin")}); err != nil {
		fmt.Println("not cached:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	fmt.Println(s.Close(ctx))
	// Output: <nil>
}
