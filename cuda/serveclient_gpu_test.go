package cuda

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda/compileserver"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/disk"
)

// cubKernel is a CUB-heavy kernel: block load, radix sort, store and
// reduce over one block, with the shared prelude of headers that NVRTC's
// automatic PCH can reuse. Kernels of different idx differ in their tile,
// so each is new to NVRTC. out[n] holds the sum of each thread's first
// item after the store (its thread index), plus VALUE from value.cuh.
func cubKernel(idx int) (src string, block, items int) {
	block, items = 32*(2+idx%7), 1+idx/7
	return fmt.Sprintf(`#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cuda/std/array>
#include "value.cuh"
constexpr int BLOCK = %d;
constexpr int ITEMS = %d;
extern "C" __global__ void k(const int* in, int* out) {
	using Load = cub::BlockLoad<int, BLOCK, ITEMS, cub::BLOCK_LOAD_TRANSPOSE>;
	using Sort = cub::BlockRadixSort<int, BLOCK, ITEMS>;
	using Store = cub::BlockStore<int, BLOCK, ITEMS, cub::BLOCK_STORE_TRANSPOSE>;
	using Reduce = cub::BlockReduce<int, BLOCK>;
	__shared__ union {
		typename Load::TempStorage load;
		typename Sort::TempStorage sort;
		typename Store::TempStorage store;
		typename Reduce::TempStorage reduce;
	} tmp;
	int v[ITEMS];
	Load(tmp.load).Load(in, v);
	__syncthreads();
	Sort(tmp.sort).Sort(v);
	__syncthreads();
	Store(tmp.store).Store(out, v);
	__syncthreads();
	int s = Reduce(tmp.reduce).Sum(v[0]);
	if (threadIdx.x == 0) out[BLOCK * ITEMS] = s + VALUE;
}
`, block, items), block, items
}

// cubOptions returns NVRTC's options for the CUB kernels: the toolkit's
// CCCL headers.
func cubOptions(t testing.TB) []string {
	root := os.Getenv("CUDA_HOME")
	if root == "" {
		root = "/usr/local/cuda"
	}
	cccl := filepath.Join(root, "include", "cccl")
	if _, err := os.Stat(filepath.Join(cccl, "cub")); err != nil {
		t.Skipf("no CCCL headers at %s: %v", cccl, err)
	}
	return []string{"-std=c++17", "-I", cccl, "-I", filepath.Join(root, "include")}
}

// cubKernelSource is cubKernel idx as a Source with value.cuh in dir.
func cubKernelSource(t testing.TB, dir string, idx int) (Source, int, int) {
	code, block, items := cubKernel(idx)
	src := Source{Code: []byte(code), Path: fmt.Sprintf("cub%d.cu", idx), Options: append(cubOptions(t), "-I", dir)}
	return src, block, items
}

// heavySource is a kernel over a header of many templates, which
// kcache's dependency scanner can key (the toolkit's CCCL headers it
// cannot yet: see docs/serve.md): kernel idx writes f<idx>(0) + VALUE = idx
// + VALUE.
func heavySource(t testing.TB, dir string, idx int) Source {
	if _, err := os.Stat(filepath.Join(dir, "heavy.cuh")); err != nil {
		var b strings.Builder
		b.WriteString("#pragma once\n")
		for i := range 4000 {
			fmt.Fprintf(&b, "template <typename T> __device__ __forceinline__ T f%d(T x) { return x + T(%d); }\n", i, i)
		}
		writeFile(t.(*testing.T), filepath.Join(dir, "heavy.cuh"), b.String())
	}
	code := fmt.Sprintf("#include \"heavy.cuh\"\n#include \"value.cuh\"\nextern \"C\" __global__ void k(int* out) { out[0] = f%d<int>(0) + VALUE; }\n", idx)
	return Source{Code: []byte(code), Path: fmt.Sprintf("heavy%d.cu", idx), Options: []string{"-std=c++17", "-I", dir}}
}

// runHeavy launches heavy kernel idx and checks what it wrote.
func runHeavy(t testing.TB, ctx *Context, m interface {
	Function(string) (*Function, error)
}, idx, value int) {
	t.Helper()
	dout := devBuffer(t, ctx, make([]byte, 4))
	if err := launchK(ctx, m, 1, dout); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4)
	if err := ctx.CopyFromDevice(out, dout); err != nil {
		t.Fatal(err)
	}
	if got := int(int32(binary.LittleEndian.Uint32(out))); got != idx+value {
		t.Fatalf("kernel %d wrote %d, want %d (VALUE %d)", idx, got, idx+value, value)
	}
}

// runCUBKernel launches the kernel and checks the sort and the sum, with
// VALUE = value.
func runCUBKernel(t testing.TB, ctx *Context, m interface {
	Function(string) (*Function, error)
}, block, items, value int) {
	t.Helper()
	if err := checkCUBKernel(t, ctx, m, block, items, value); err != nil {
		t.Fatal(err)
	}
}

// checkCUBKernel is runCUBKernel returning what differs, for a test that
// records NVRTC's behaviour rather than failing on it.
func checkCUBKernel(t testing.TB, ctx *Context, m interface {
	Function(string) (*Function, error)
}, block, items, value int) error {
	n := block * items
	in := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(in[4*i:], uint32(n-1-i))
	}
	din := devBuffer(t, ctx, in)
	dout := devBuffer(t, ctx, make([]byte, 4*(n+1)))
	if err := launchK(ctx, m, block, din, dout); err != nil {
		return err
	}
	out := make([]byte, 4*(n+1))
	if err := ctx.CopyFromDevice(out, dout); err != nil {
		return err
	}
	for i := range n {
		if v := int(int32(binary.LittleEndian.Uint32(out[4*i:]))); v != i {
			return fmt.Errorf("out[%d] = %d: not sorted", i, v)
		}
	}
	// BlockStore's transposing store leaves each thread's items striped:
	// thread t's first item is t.
	want := block*(block-1)/2 + value
	if got := int(int32(binary.LittleEndian.Uint32(out[4*n:]))); got != want {
		return fmt.Errorf("sum %d, want %d (VALUE %d)", got, want, value)
	}
	return nil
}

// newServeCache is a cache whose key holds this process's environment, as
// the server's check of it does.
func newServeCache(t testing.TB, ctx *Context, dir string) *Cache {
	t.Helper()
	cfg, err := kcache.LoadConfig(func(c *kcache.Config) { c.Dir = dir; c.Persistent = true })
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCache(ctx, kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st}), CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// useTestServer points this process's cold misses at a server of the test
// binary on a private socket, started on demand, stopped at cleanup.
func useTestServer(t *testing.T) *compileserver.Client {
	rt, err := os.MkdirTemp("", "kcs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	t.Setenv("XDG_RUNTIME_DIR", rt)
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ServeEnv, self)
	t.Setenv(serveChildEnv, "1")
	cl := &compileserver.Client{}
	t.Cleanup(func() { cl.Stop(context.Background()) })
	return cl
}

// TestServePCHAcrossHeaderEdit: kernels built through the server are
// correct; after an edit to a header of the PCH's set, a new kernel and an
// old one built through the server are built from the new header: the
// first without PCH by the server, which then retires, the second by a new
// server started on demand. (A client that finds no server compiles
// itself and starts one, which compiles the same program as a warm-up.)
func TestServePCHAcrossHeaderEdit(t *testing.T) {
	ctx := requireGPU(t)
	cl := useTestServer(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "value.cuh"), "#define VALUE 1\n")
	c := newServeCache(t, ctx, filepath.Join(dir, "cache"))
	build := func(idx, value int) {
		t.Helper()
		start := time.Now()
		m, err := c.Module(context.Background(), heavySource(t, dir, idx))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Release()
		if m.Outcome != kcache.OutcomeBuilt {
			t.Fatalf("kernel %d: outcome %v, want built", idx, m.Outcome)
		}
		runHeavy(t, ctx, m, idx, value)
		t.Logf("kernel %d (VALUE %d): %v", idx, value, time.Since(start).Round(time.Millisecond))
	}
	build(0, 1)
	build(1, 1)
	first := waitCompiled(t, cl, 0, 2)
	t.Logf("server: %+v", *first)
	writeFile(t, filepath.Join(dir, "value.cuh"), "#define VALUE 2\n")
	build(2, 2) // the server compiles it without PCH, then retires
	build(0, 2) // a new server
	build(3, 2)
	st := waitCompiled(t, cl, first.PID, 2)
	t.Logf("new server: %+v", *st)
}

// waitCompiled waits until a server other than pid old has compiled n.
func waitCompiled(t *testing.T, cl *compileserver.Client, old, n int) *compileserver.Stats {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := cl.Status(context.Background())
		if err == nil && st.PID != old && st.Compiled >= int64(n) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("no server other than %d compiled %d: %+v %v", old, n, st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNVRTCPCHHeaderEdit records what NVRTC's automatic PCH does when a
// header of its set changes, in one process: with a new modification time,
// and with the time and size kept (as a copy preserving times makes). The
// compile server does not rely on either: it compiles without PCH and
// retires when a header it saw changes (see compileserver's pchSafe).
func TestNVRTCPCHHeaderEdit(t *testing.T) {
	ctx := requireGPU(t)
	if err := loadPCH(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	hdr := filepath.Join(dir, "value.cuh")
	writeFile(t, hdr, "#define VALUE 1\n")
	compileRun := func(idx, want int) bool {
		t.Helper()
		src, block, items := cubKernelSource(t, dir, idx)
		c := newServeCache(t, ctx, filepath.Join(dir, "cache"))
		p, err := c.plan(src)
		if err != nil {
			t.Fatal(err)
		}
		p.options = append(p.options, "-pch")
		start := time.Now()
		im, err := runNVRTC(src, p)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		m, err := ctx.LoadModule(im.code, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Unload()
		err = checkCUBKernel(t, ctx, m, block, items, want)
		t.Logf("kernel %d with -pch: %v, VALUE %d expected: %v", idx, took.Round(time.Millisecond), want, cmp.Or(error(err), errors.New("correct")))
		return err == nil
	}
	compileRun(0, 1)
	compileRun(1, 1)
	writeFile(t, hdr, "#define VALUE 2\n") // a new mtime
	t.Logf("edit with a new (older than the PCH) mtime: NVRTC's PCH built from the new header: %v", compileRun(2, 2))
	fi, _ := os.Stat(hdr)
	os.WriteFile(hdr, []byte("#define VALUE 3\n"), 0o644)
	os.Chtimes(hdr, fi.ModTime(), fi.ModTime()) // same size, same mtime
	t.Logf("same-mtime edit: NVRTC's PCH built from the new header: %v", compileRun(3, 3))
}

// TestServeSameImage: the server's image of a program is the one this
// process's NVRTC makes: -pch changes how headers are parsed, not the code.
func TestServeSameImage(t *testing.T) {
	ctx := requireGPU(t)
	cl := useTestServer(t)
	start, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Start(start, os.Getenv(ServeEnv)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "value.cuh"), "#define VALUE 5\n")
	c := newServeCache(t, ctx, filepath.Join(dir, "cache"))
	for idx := range 2 {
		src := heavySource(t, dir, idx)
		p, err := c.plan(src)
		if err != nil {
			t.Fatal(err)
		}
		key, err := c.key(context.Background(), src, p)
		if err != nil {
			t.Fatal(err)
		}
		served, err := c.serveBuild(context.Background(), os.Getenv(ServeEnv), nil, src, p, key.Digest())
		if err != nil {
			t.Fatal(err)
		}
		local, err := runNVRTC(src, p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(served.code, local.code) {
			t.Errorf("kernel %d: the server's CUBIN (%d bytes) differs from this process's (%d bytes)", idx, len(served.code), len(local.code))
		}
	}
}

// TestServeFallback: with KCACHE_SERVE=connect and no server, or a server
// that answers stale, the build happens here and is right.
func TestServeFallback(t *testing.T) {
	ctx := requireGPU(t)
	useTestServer(t)
	t.Setenv(ServeEnv, "connect")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "value.cuh"), "#define VALUE 3\n")
	c := newServeCache(t, ctx, filepath.Join(dir, "cache"))
	m, err := c.Module(context.Background(), heavySource(t, dir, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	if m.Outcome != kcache.OutcomeBuilt {
		t.Errorf("outcome %v", m.Outcome)
	}
	runHeavy(t, ctx, m, 3, 3)
}

// TestServeEarlyCCCL: a CCCL kernel's key takes longer than
// serveEarlyDelay, so Module sends its compile to a running server before
// the key is known; the server answers from that compile once the key's
// files are found unchanged since before it began, and the kernel is
// right. (The first kernel finds no server: it compiles itself, and the
// server it starts compiles the same program as a warm-up.)
func TestServeEarlyCCCL(t *testing.T) {
	gpu := requireGPU(t)
	cl := useTestServer(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "value.cuh"), "#define VALUE 1\n")
	// The cache lives elsewhere: the key names absent places in dir (the
	// headers CCCL probes for, searched on every -I), so the server
	// trusts an early compile only when dir too has not changed within
	// its settle margin, and creating the cache in it would change it.
	c := newServeCache(t, gpu, t.TempDir())
	time.Sleep(2100 * time.Millisecond) // past the settle margin of dir's and value.cuh's change times
	for idx := range 2 {
		src, block, items := cubKernelSource(t, dir, idx)
		m, err := c.Module(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if m.Outcome != kcache.OutcomeBuilt {
			t.Fatalf("kernel %d: outcome %v, want built", idx, m.Outcome)
		}
		runCUBKernel(t, gpu, m, block, items, 1)
		m.Release()
	}
	st := waitCompiled(t, cl, 0, 2)
	t.Logf("server: early %d, redone %d, abandoned %d, compiled %d; the key names %d absent places in %s",
		st.Early, st.EarlyRedone, st.EarlyAbandoned, st.Compiled, absentUnder(t, c, dir), dir)
	if st.Compiled != 2 || st.Early != 1 {
		t.Errorf("server compiled %d (%d early), want 2: the first kernel's warm-up, the second early", st.Compiled, st.Early)
	}
}

// absentUnder counts the places under dir that the key of cubKernel 1
// (with -I dir) asserts absent.
func absentUnder(t *testing.T, c *Cache, dir string) int {
	src, _, _ := cubKernelSource(t, dir, 1)
	p, err := c.plan(src)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range scanInputs(src, p) {
		_, trace, err := c.scanner.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range trace {
			if d.Rule == deps.RuleAbsent && strings.HasPrefix(d.Path, dir+string(filepath.Separator)) {
				n++
			}
		}
	}
	return n
}
