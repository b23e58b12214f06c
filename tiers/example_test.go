package tiers_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"os"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/opencl"
	"github.com/kcache/kcache/tiers"
)

// ExampleFromEnv opens the tiers the KCACHE_* environment configures (with
// KCACHE_REMOTE set, the fleet's Redis below the machine's disk) and
// closes them before the process exits.
func ExampleFromEnv() {
	cache, err := tiers.FromEnv(slog.Default())
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cache.Close(ctx)
	}()
	key := &kcache.Key{Image: kcache.Image{Format: "ptx", Source: []byte(".version 8.0 ...")}}
	r, err := cache.GetOrBuild(context.Background(), key, func(context.Context) ([]byte, error) {
		return []byte("device binary"), nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Outcome)
}

// ExampleOpen is the recommended set-up for a program of your own: the
// tiers the KCACHE_* environment configures, an OpenCL cache over them,
// and one kernel built (or found in the cache) and run. It needs an OpenCL
// device, so go test compiles it without running it; TestExampleOpen runs
// it twice, as two processes would, on a real device.
func ExampleOpen() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// iotaCL is the example's kernel: v[i] = k*i.
const iotaCL = `__kernel void iota(__global float* v, float k) { v[get_global_id(0)] = k * get_global_id(0); }`

// run builds iotaCL through the cache on the first OpenCL device, runs it
// on four numbers and prints where the program came from and the last
// number.
func run(ctx context.Context, out io.Writer) (err error) {
	cfg, err := kcache.LoadConfig() // the KCACHE_* variables
	if err != nil {
		return err
	}
	bins := tiers.Open(cfg, slog.Default()) // disk, then Redis when KCACHE_REMOTE is set
	defer func() {
		// Close merges the counters and sends the remote tier's queued
		// writes; it gets a few seconds even when ctx has ended.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err = errors.Join(err, bins.Close(ctx))
	}()

	devs, err := opencl.AllDevices()
	if err != nil {
		return err // names the packages to install when there is no OpenCL
	}
	if len(devs) == 0 {
		return errors.New("no OpenCL device")
	}
	dev := devs[0]
	cl, err := opencl.NewContext(dev)
	if err != nil {
		return err
	}
	defer cl.Release()
	queue, err := cl.NewQueue(dev)
	if err != nil {
		return err
	}
	defer queue.Release()
	cache := opencl.NewCache(cl, bins, opencl.CacheOptions{})
	defer cache.Close() // stores the binaries still pending, before bins closes

	src := opencl.Source{Code: []byte(iotaCL), Path: "iota.cl", Options: "-cl-fast-relaxed-math"}
	prog, err := cache.Program(ctx, dev, src)
	if err != nil {
		return err // a build error is an *opencl.BuildError carrying the compiler's log
	}
	defer prog.Release()
	kernel, err := prog.Kernel("iota") // lock-free and allocation-free on a hit
	if err != nil {
		return err
	}
	buf, err := cl.NewBuffer(opencl.MemReadWrite, 4*4)
	if err != nil {
		return err
	}
	defer buf.Release()
	ev, err := kernel.Run(queue, []int{4}, nil, buf, float32(3))
	if err != nil {
		return err
	}
	err = ev.Wait()
	ev.Release()
	if err != nil {
		return err
	}
	data := make([]byte, 4*4)
	if err := queue.Read(buf, 0, data); err != nil {
		return err
	}
	last := math.Float32frombits(binary.NativeEndian.Uint32(data[12:]))
	_, err = fmt.Fprintln(out, prog.Outcome, last) // "built 9", then "disk 9"
	return err
}

// TestExampleOpen runs ExampleOpen's program twice on a real OpenCL device
// over one fresh cache directory: the first run builds the kernel, the
// second, with every object of the first gone as in a new process, loads
// it from disk, and both runs compute the right result.
func TestExampleOpen(t *testing.T) {
	if devs, err := opencl.AllDevices(); err != nil || len(devs) == 0 {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("KCACHE_REQUIRE_REAL=1 but there is no OpenCL device: %v", err)
		}
		t.Skipf("no OpenCL device: %v", err)
	}
	t.Setenv("KCACHE_DIR", t.TempDir())
	t.Setenv("KCACHE_REMOTE", "")
	t.Setenv("POCL_KERNEL_CACHE", "0") // kcache is the cache, as the README says
	for _, want := range []string{"built 9\n", "disk 9\n"} {
		var out bytes.Buffer
		if err := run(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("printed %q; want %q", out.String(), want)
		}
	}
}
