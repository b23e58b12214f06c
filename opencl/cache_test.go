package opencl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// tierSet is a fresh "process": binary tiers over dir and an object tier
// for a new context, as a new process running the same program would have.
type tierSet struct {
	bins  *kcache.Cache
	store *disk.Store
	cache *Cache
	ctx   *Context
	q     *Queue
}

func newTierSet(t *testing.T, dir string) *tierSet {
	t.Helper()
	return newTierSetWith(t, dir, CacheOptions{CommitDelay: -1})
}

// newTierSetWith is newTierSet with the program cache's options.
func newTierSetWith(t *testing.T, dir string, opts CacheOptions) *tierSet {
	t.Helper()
	return newTierSetLogged(t, dir, opts, nil)
}

// newTierSetLogged is newTierSetWith whose binary cache logs to logger
// (nil: the default logger).
func newTierSetLogged(t *testing.T, dir string, opts CacheOptions, logger *slog.Logger) *tierSet {
	t.Helper()
	f := testFixture(t)
	st, err := disk.Open(disk.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cfg := kcache.DefaultConfig(func(string) string { return "" })
	bins := kcache.New(cfg, logger, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	ctx, err := NewContext(f.dev)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ctx.NewQueue(f.dev)
	if err != nil {
		t.Fatal(err)
	}
	opts.Environ = []string{}
	c := NewCache(ctx, bins, opts)
	t.Cleanup(func() {
		c.Close()
		// The disk tier's background work (a new cache's first
		// maintenance pass, eviction) finishes before the test's
		// directory is removed: left running, it wrote into it during
		// the removal (TestCallerCancelledDuringRebuild, 4 of 60 runs
		// beside another package's tests).
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := bins.Close(closeCtx); err != nil {
			t.Errorf("closing the binary tiers: %v", err)
		}
		q.Release()
		ctx.Release()
	})
	return &tierSet{bins: bins, store: st, cache: c, ctx: ctx, q: q}
}

func (ts *tierSet) program(t *testing.T, src Source) *BuiltProgram {
	t.Helper()
	p, err := ts.cache.Program(context.Background(), testFixture(t).dev, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Release)
	return p
}

func (ts *tierSet) saxpy(t *testing.T, p *BuiltProgram, alpha float32) {
	t.Helper()
	k, err := p.Kernel("saxpy")
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Use(func(k *Kernel) error { return runSaxpy(ts.ctx, ts.q, k, 256, alpha) }); err != nil {
		t.Fatal(err)
	}
}

func TestCacheBuildReloadRun(t *testing.T) {
	dir := t.TempDir()
	first := newTierSet(t, dir)
	src := Source{Code: []byte(testSource), Options: "-cl-std=CL1.2"}
	p := first.program(t, src)
	if p.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("cold outcome %v, want built", p.Outcome)
	}
	first.saxpy(t, p, 3)
	if again := first.program(t, src); again.Outcome != kcache.OutcomeMemory {
		t.Errorf("second request outcome %v, want memory", again.Outcome)
	}
	second := newTierSet(t, dir)
	warm := second.program(t, src)
	if warm.Outcome != kcache.OutcomeDisk {
		t.Fatalf("new context outcome %v, want disk", warm.Outcome)
	}
	if warm.BlobID() != p.BlobID() {
		t.Error("blob IDs differ between processes")
	}
	second.saxpy(t, warm, 5) // correct results from the warm binary
	if s := second.bins.Stats(); s.Builds != 0 || s.Disk.Hits != 1 {
		t.Errorf("warm stats %+v", s)
	}
}

// writeFile writes content to path with an mtime in the past, as a file
// edited a while ago has.
func writeFile(t *testing.T, path, content string, age time.Duration) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-age)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	// The ctime stays now: a build that reads the file within the file
	// system's timestamp tick may not store its binary. Let it settle,
	// as any edit does before the next build in real use.
	time.Sleep(settle)
}

// settle is more than the scanner's too-new window on a file system with
// timestamps finer than a second.
const settle = 30 * time.Millisecond

const headerSource = `#include "scale.h"
__kernel void saxpy(__global const float* x, __global const float* y, __global float* out,
                    const float alpha, const uint n) {
	size_t i = get_global_id(0);
	if (i < n) out[i] = SCALE * x[i] + y[i]; // alpha unused: SCALE plays its part
}`

func TestHeaderEditRebuilds(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc")
	os.Mkdir(inc, 0o755)
	writeFile(t, filepath.Join(inc, "scale.h"), "#include \"nested.h\"\n#define SCALE NESTED\n", time.Hour)
	writeFile(t, filepath.Join(inc, "nested.h"), "#define NESTED 1.0f\n", time.Hour)
	ts := newTierSet(t, filepath.Join(dir, "cache"))
	src := Source{Code: []byte(headerSource), Options: "-I " + inc}
	before := ts.program(t, src)
	ts.saxpy(t, before, 1) // SCALE is 1
	if again := ts.program(t, src); again.Outcome != kcache.OutcomeMemory {
		t.Fatalf("unchanged headers: outcome %v, want memory", again.Outcome)
	}
	// Edit the nested header: the key must change and the build rerun.
	writeFile(t, filepath.Join(inc, "nested.h"), "#define NESTED 2.0f\n", time.Minute)
	after := ts.program(t, src)
	if after.Outcome != kcache.OutcomeBuilt || after.BlobID() == before.BlobID() {
		t.Fatalf("nested header edit: outcome %v, same digest %v", after.Outcome, after.BlobID() == before.BlobID())
	}
	ts.saxpy(t, after, 2) // SCALE is 2 now: the new header is compiled in
}

func TestOptionsChangeRebuilds(t *testing.T) {
	ts := newTierSet(t, t.TempDir())
	src := Source{Code: []byte("__kernel void k(__global int* o) { o[0] = VALUE; }")}
	digests := map[kcache.Digest]bool{}
	for _, opts := range []string{"-DVALUE=1", "-DVALUE=2", "-DVALUE=2 -cl-fast-relaxed-math"} {
		src.Options = opts
		p := ts.program(t, src)
		if p.Outcome != kcache.OutcomeBuilt {
			t.Errorf("%q: outcome %v, want built", opts, p.Outcome)
		}
		digests[p.BlobID()] = true
	}
	if len(digests) != 3 {
		t.Errorf("%d distinct digests, want 3", len(digests))
	}
}

func TestBuildErrorIsKeptWithLog(t *testing.T) {
	ts := newTierSet(t, t.TempDir())
	src := Source{Code: []byte("__kernel void k(__global int* o) { o[0] = undeclared_thing; }")}
	for range 2 {
		_, err := ts.cache.Program(context.Background(), testFixture(t).dev, src)
		var be *BuildError
		if !errors.As(err, &be) || !strings.Contains(be.Log, "undeclared_thing") {
			t.Fatalf("err = %v, want a BuildError with the log", err)
		}
	}
	if s := ts.bins.Stats(); s.FailedBuilds != 1 {
		t.Errorf("%d failed builds, want 1: the error must be kept", s.FailedBuilds)
	}
}

// binFiles returns the files of the disk tier under dir that hold
// programs' binaries: one per entry, the record's, which holds its binary
// (see package disk); dependency records are left out.
func binFiles(t *testing.T, dir string) []string {
	t.Helper()
	records := dependencyRecordFiles(dir)
	var out []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".src") && !records[path] {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// dependencyRecordFiles returns the files of the entries under dir that
// are dependency records (deps.WithRecords).
func dependencyRecordFiles(dir string) map[string]bool {
	st, err := disk.Open(disk.Options{Dir: dir})
	if err != nil {
		return nil
	}
	defer st.Close(context.Background())
	out := map[string]bool{}
	st.Walk(context.Background(), func(i disk.Info) error {
		if i.Key != nil && kcache.IsDependencyRecord(i.Key) {
			out[i.RecordPath()] = true
		}
		return nil
	})
	return out
}

func TestDamagedBinaryIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	src := Source{Code: []byte(testSource)}
	newTierSet(t, dir).program(t, src)
	bins := binFiles(t, dir)
	if len(bins) != 1 {
		t.Fatalf("%d entry files, want 1", len(bins))
	}
	b, _ := os.ReadFile(bins[0])
	b[len(b)/2] ^= 0x40
	os.WriteFile(bins[0], b, 0o600)
	ts := newTierSet(t, dir)
	p := ts.program(t, src)
	if p.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("damaged binary: outcome %v, want built", p.Outcome)
	}
	ts.saxpy(t, p, 2)
}

// TestForeignBinaryIsRejectedByRuntime stores, with a valid checksum, bytes
// that are not a program for this device: the runtime refuses them, the
// entry is replaced and the program built from source.
func TestForeignBinaryIsRejectedByRuntime(t *testing.T) {
	dir := t.TempDir()
	ts := newTierSet(t, dir)
	src := Source{Code: []byte(testSource)}
	key, err := ts.cache.Key(testFixture(t).dev, src)
	if err != nil {
		t.Fatal(err)
	}
	foreign := []byte(strings.Repeat("\x7fELF not a pocl binary ", 64))
	if err := ts.store.Put(context.Background(), key, kcache.Entry{Binary: foreign}); err != nil {
		t.Fatal(err)
	}
	p := ts.program(t, src)
	if p.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("outcome %v, want built", p.Outcome)
	}
	ts.saxpy(t, p, 2)
	e, err := ts.store.Get(context.Background(), key)
	if err != nil || string(e.Binary) == string(foreign) {
		t.Errorf("foreign entry not replaced: %v", err)
	}
}

func TestBlobRoundTrip(t *testing.T) {
	f := testFixture(t)
	a := newTierSet(t, t.TempDir())
	src := Source{Code: []byte(testSource)}
	p := a.program(t, src)
	blob, err := p.Blob(context.Background())
	if err != nil || len(blob) == 0 {
		t.Fatalf("Blob: %d bytes, %v", len(blob), err)
	}
	b := newTierSet(t, t.TempDir()) // no disk entry there: only the blob
	q, err := b.cache.ProgramFromBlob(context.Background(), f.dev, src, blob)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	if q.BlobID() != p.BlobID() {
		t.Error("blob ID changed")
	}
	b.saxpy(t, q, 4)
	if _, err := b.cache.ProgramFromBlob(context.Background(), f.dev, Source{Code: []byte("x")}, []byte("garbage")); err == nil {
		t.Error("garbage blob accepted")
	}
}

// TestConcurrentKernelUse launches one cached kernel from many goroutines,
// each with its own buffers: SafeKernel must keep their arguments apart.
func TestConcurrentKernelUse(t *testing.T) {
	ts := newTierSet(t, t.TempDir())
	p := ts.program(t, Source{Code: []byte(testSource)})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			k, err := p.Kernel("saxpy")
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 5 {
				alpha := float32(g*10 + i)
				if err := k.Use(func(k *Kernel) error { return runSaxpy(ts.ctx, ts.q, k, 128, alpha) }); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

func TestKernelHitAllocatesNothing(t *testing.T) {
	ts := newTierSet(t, t.TempDir())
	p := ts.program(t, Source{Code: []byte(testSource)})
	if _, err := p.Kernel("saxpy"); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { p.Kernel("saxpy") }); n != 0 {
		t.Errorf("kernel hit allocates %v times", n)
	}
}

// TestEvictionReleasesProgramAndKernels fills an object tier with a small
// threshold: the least recently used program leaves it, and its program
// and kernel objects are released once its last holder lets go.
func TestEvictionReleasesProgramAndKernels(t *testing.T) {
	f := testFixture(t)
	st, err := disk.Open(disk.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := kcache.DefaultConfig(func(string) string { return "" })
	cfg.InMemoryThreshold = 1 // every new program evicts the others
	bins := kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	c := NewCache(f.ctx, bins, CacheOptions{CommitDelay: -1, Environ: []string{}})
	defer c.Close()
	src := func(v int) Source {
		return Source{Code: []byte("__kernel void k(__global int* o) { o[0] = VALUE; }"), Options: fmt.Sprintf("-DVALUE=%d", v)}
	}
	first, err := c.Program(context.Background(), f.dev, src(1))
	if err != nil {
		t.Fatal(err)
	}
	k, err := first.Kernel("k")
	if err != nil {
		t.Fatal(err)
	}
	prog, kern := first.Program(), k.Raw()
	second, err := c.Program(context.Background(), f.dev, src(2))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	if prog.Handle() == 0 || kern.Handle() == 0 {
		t.Fatal("an evicted program was released while a caller held it")
	}
	first.Release()
	if prog.Handle() != 0 || kern.Handle() != 0 {
		t.Errorf("evicted program (%#x) or its kernel (%#x) not released after the last holder let go", prog.Handle(), kern.Handle())
	}
	// Requested again, it comes back from disk, with a new kernel object.
	again, err := c.Program(context.Background(), f.dev, src(1))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Release()
	if again.Outcome != kcache.OutcomeDisk {
		t.Errorf("outcome %v, want disk", again.Outcome)
	}
	if k2, err := again.Kernel("k"); err != nil || k2 == k {
		t.Errorf("kernel of the reloaded program: %v, same object %v", err, k2 == k)
	}
}
