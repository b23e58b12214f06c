package redis

import (
	"context"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/opencl"
)

// TestOpenCLAcrossNodes builds a real OpenCL program (PoCL) on one node
// and runs it on another that shares only the Redis server: the second
// node's program comes from the remote tier, and its kernel computes the
// right result.
func TestOpenCLAcrossNodes(t *testing.T) {
	if err := opencl.Load(); err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("KCACHE_REQUIRE_REAL=1 but OpenCL is unavailable: %v", err)
		}
		t.Skipf("OpenCL unavailable: %v", err)
	}
	devs, err := opencl.AllDevices()
	if err != nil || len(devs) == 0 {
		t.Fatalf("no OpenCL device: %v", err)
	}
	dev := devs[0]
	srv := startServer(t)
	src := opencl.Source{Code: []byte(`__kernel void fill(__global int* v, const int base) {
	v[get_global_id(0)] = base + VALUE * (int)get_global_id(0);
}`), Options: "-DVALUE=3"}

	run := func(name string) kcache.Outcome {
		n := newNode(t, srv.url(), tempDir(t, name), Options{Timeout: time.Second})
		cl, err := opencl.NewContext(dev)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Release()
		cache := opencl.NewCache(cl, n.cache, opencl.CacheOptions{})
		p, err := cache.Program(context.Background(), dev, src)
		if err != nil {
			t.Fatal(err)
		}
		outcome := p.Outcome
		k, err := p.Kernel("fill")
		if err != nil {
			t.Fatal(err)
		}
		q, err := cl.NewQueue(dev)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Release()
		const items = 64
		buf, err := cl.NewBuffer(opencl.MemReadWrite, 4*items)
		if err != nil {
			t.Fatal(err)
		}
		defer buf.Release()
		ev, err := k.Run(q, []int{items}, nil, buf, int32(10))
		if err != nil {
			t.Fatal(err)
		}
		ev.Wait()
		ev.Release()
		out := make([]byte, 4*items)
		if err := q.Read(buf, 0, out); err != nil {
			t.Fatal(err)
		}
		for i := range items {
			if got := int32(binary.NativeEndian.Uint32(out[4*i:])); got != 10+3*int32(i) {
				t.Fatalf("%s: item %d = %d, want %d", name, i, got, 10+3*i)
			}
		}
		p.Release()
		cache.Close() // commits the binary to the tiers
		n.close(t)    // sends it to Redis
		return outcome
	}
	if o := run("a"); o != kcache.OutcomeBuilt {
		t.Fatalf("first node: %v, want built", o)
	}
	if o := run("b"); o != kcache.OutcomeRemote {
		t.Fatalf("second node: %v, want remote", o)
	}
}
