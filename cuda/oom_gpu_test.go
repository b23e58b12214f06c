package cuda

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kcache/kcache"
)

// TestCacheOutOfMemoryEvicts runs the spec's rule on a real device: when
// a module does not fit in device memory, the object tier unloads every
// module no caller holds and tries once more. Two modules each hold a
// static array of 1 GiB; the device is filled until only one fits. The
// first module, released but kept in the object tier, is what the second
// module's load must evict.
//
// The driver loads lazily by default (a module's globals may be allocated
// at first use, not at load), so the test runs in a child process with
// CUDA_MODULE_LOADING=EAGER, where the load itself needs the memory.
func TestCacheOutOfMemoryEvicts(t *testing.T) {
	requireGPU(t)
	if os.Getenv("CUDA_MODULE_LOADING") != "EAGER" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCacheOutOfMemoryEvicts$", "-test.v")
		cmd.Env = append(os.Environ(), "CUDA_MODULE_LOADING=EAGER")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestCacheOutOfMemoryEvicts") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	ctx := requireGPU(t)
	const size = 1 << 30
	src := func(i int) Source {
		return Source{Code: []byte(fmt.Sprintf(
			"__device__ char pad%d[%d];\nextern \"C\" __global__ void touch%d() { pad%d[threadIdx.x] = 1; }\n",
			i, size, i, i))}
	}
	c := newTestCache(t, ctx, t.TempDir())
	first, err := c.Module(context.Background(), src(0))
	if err != nil {
		t.Fatal(err)
	}
	first.Release() // unused now, but still loaded in the object tier

	// Fill the device until between a quarter and a half of a module's
	// array is free: the second module cannot load beside the first.
	var held []DevicePtr
	t.Cleanup(func() {
		for _, p := range held {
			ctx.Free(p)
		}
	})
	for {
		free, _, err := ctx.MemoryInfo()
		if err != nil {
			t.Fatal(err)
		}
		if free < size/2 {
			break
		}
		n := free - size/4
		if n > 8<<30 {
			n = 8 << 30
		}
		p, err := ctx.Alloc(int(n))
		if err != nil {
			t.Fatalf("filling the device (%d bytes free, asked %d): %v", free, n, err)
		}
		held = append(held, p)
	}
	free, _, _ := ctx.MemoryInfo()
	t.Logf("device filled: %d MiB free", free>>20)

	second, err := c.Module(context.Background(), src(1))
	if err != nil {
		t.Fatalf("second module after eviction: %v", err)
	}
	defer second.Release()
	// The compile stored the image before its load ran out of memory; the
	// retry after the eviction finds it on disk: proof that the first load
	// failed and that the retry did not compile again.
	if second.Outcome != kcache.OutcomeDisk {
		t.Errorf("second module: outcome %v, want disk (the retry after eviction)", second.Outcome)
	}
	f, err := second.Function("touch1")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Launch(nil, Dim(1), Dim(32), 0); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	// The first module was evicted: asking for it again finds it on disk,
	// and it cannot load beside the second, which a caller still holds.
	again, err := c.Module(context.Background(), src(0))
	if err == nil {
		again.Release()
		t.Fatalf("first module loaded again beside the held second one (outcome %v); the device was not full", again.Outcome)
	}
	if !IsOutOfMemory(err) {
		t.Errorf("first module again: %v, want out of memory", err)
	}
}
