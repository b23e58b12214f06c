package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache/disk"
)

// compileC builds one of testdata's C programs against libOpenCL.
func compileC(t *testing.T, name string) string {
	t.Helper()
	_, err := exec.LookPath("gcc")
	requireReal(t, "gcc", err)
	_, err = os.Stat("/usr/include/CL/cl.h")
	requireReal(t, "OpenCL headers (opencl-c-headers)", err)
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("gcc", "-Wall", "-o", bin, filepath.Join("testdata", name+".c"), "-lOpenCL").CombinedOutput(); err != nil {
		requireReal(t, "libOpenCL (ocl-icd-opencl-dev)", err)
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// TestExitWithoutRelease runs a program that builds, launches, reads its
// result and returns from main without releasing anything, as OpenCV and
// GEGL do. Reading a PoCL binary from an exit handler crashed it (the
// driver's compiler is gone by then) and stored nothing; the layer must
// store the binary at the read that follows the launch, so the first run
// exits cleanly with one miss and the second hits.
func TestExitWithoutRelease(t *testing.T) {
	requireLayer(t)
	a := app{name: "norelease", argv: []string{compileC(t, "norelease")}, programs: 1, normalize: func(s string) string { return s }}
	dir := t.TempDir()
	base := a.run(t, dir, "")
	if base.err != nil {
		t.Fatal(base.err)
	}
	cache := t.TempDir()
	checkRun(t, a, "cold", a.run(t, dir, cache), base.stdout, 1)
	if n := len(entries(t, cache)); n != 1 {
		t.Fatalf("cache holds %d entries after the cold run, want 1", n)
	}
	checkRun(t, a, "warm", a.run(t, dir, cache), base.stdout, 0)
}

// TestCounters checks that the layer merges its counts into the cache's
// persistent counters, which `kcache stats` shows, once per process: a
// cold run and two warm runs of an application with two programs make
// two misses and builds, and four hits.
func TestCounters(t *testing.T) {
	a, dir, cache := headerApp(t)
	for i := range 3 {
		if r := a.run(t, dir, cache); r.err != nil {
			t.Fatalf("run %d: %v", i, r.err)
		}
	}
	st, err := disk.Open(disk.Options{Dir: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	c, err := st.Counters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.DiskHits != 4 || c.Misses != 2 || c.Builds != 2 || c.FailedBuilds != 0 {
		t.Errorf("counters after a cold and two warm runs: %d hits, %d misses, %d builds, %d failed; want 4, 2, 2, 0",
			c.DiskHits, c.Misses, c.Builds, c.FailedBuilds)
	}
	if c.BuildTime <= 0 || c.SavedTime <= 0 {
		t.Errorf("build time %v, saved time %v: want both positive", c.BuildTime, c.SavedTime)
	}
}

// TestOppositeOrders starts two processes at once on an empty cache that
// build the same two programs in opposite orders before launching either.
// Each holds the build lock of its first program until a commit point,
// and its second build finds the other's lock held: unless a process
// stores what it holds before it waits, each waits for the other for
// KCACHE_BUILD_WAIT (30 minutes here). Each program is compiled once.
func TestOppositeOrders(t *testing.T) {
	requireLayer(t)
	bin := compileC(t, "twoorders")
	dir, cache := t.TempDir(), t.TempDir()
	runs := make([]run, 2)
	var wg sync.WaitGroup
	start := time.Now()
	for i, order := range []string{"ab", "ba"} {
		a := app{name: "twoorders " + order, argv: []string{bin, order}}
		wg.Go(func() { runs[i] = a.run(t, dir, cache) })
	}
	wg.Wait()
	misses := 0
	for _, r := range runs {
		if r.err != nil {
			t.Fatal(r.err)
		}
		misses += r.misses
	}
	if misses != 2 {
		t.Errorf("the two processes compiled %d programs, want each of the 2 once", misses)
	}
	t.Logf("both done in %v", time.Since(start))
}

// TestEarlyExitAndFork covers the layer's start, on a thread of its own
// beside the application's with PoCL's kernel cache on (on the
// application's thread with it off): a process that returns from main
// right after the loader's first call (the start may still be under way;
// its exit handler must wait for it, never crash) and one that forks right
// after it (the child, where the starting thread does not exist, must
// build through the driver alone; the parent through the cache: a miss
// cold, a hit warm).
func TestEarlyExitAndFork(t *testing.T) {
	requireLayer(t)
	bin := compileC(t, "early")
	for _, poclCache := range []string{"1", "0"} {
		t.Run("POCL_KERNEL_CACHE="+poclCache, func(t *testing.T) {
			same := func(s string) string { return s }
			extra := []string{"POCL_KERNEL_CACHE=" + poclCache}
			dir, cache := t.TempDir(), t.TempDir()
			exit := app{name: "early exit", argv: []string{bin, "exit"}, normalize: same, extraEnv: extra}
			for i := range 10 {
				if r := exit.run(t, dir, cache); r.err != nil || r.stdout != "" {
					t.Fatalf("exit run %d: %v, output %q", i, r.err, r.stdout)
				}
			}
			fork := app{name: "early fork", argv: []string{bin, "fork"}, programs: 1, normalize: same, extraEnv: extra}
			base := fork.run(t, dir, "")
			if base.err != nil {
				t.Fatal(base.err)
			}
			if base.stdout != "child: 3 18\nparent: 3 18\n" {
				t.Fatalf("without the layer: %q", base.stdout)
			}
			checkRun(t, fork, "cold", fork.run(t, dir, cache), base.stdout, 1)
			checkRun(t, fork, "warm", fork.run(t, dir, cache), base.stdout, 0)
		})
	}
}
