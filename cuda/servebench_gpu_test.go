package cuda

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/internal/syncbuf"
)

// benchFamily is one kind of CCCL kernel of the compile server's
// benchmark: kernel idx of a family is new to NVRTC (its constant K is
// idx+1) over the same headers as every other kernel of the family.
type benchFamily struct {
	// code is the program of kernel idx; it includes "value.cuh" (VALUE).
	code func(idx int) string
	// want is what the kernel leaves in out[0], launched on one block of
	// 128 threads with in[i] = i for i < 1024 and out zeroed.
	want func(idx, value int) int
}

// benchFamilies are the kernels of bench/serve-device.sh, by name:
// CUB block algorithms one per kernel (issue 22's) and four per kernel,
// CUB's device-level reduction agent (what DeviceReduce's kernels run),
// Thrust's device-side iterators, tuple and functional, and libcu++.
// block4 is cubKernel, checked by runCUBKernel.
var benchFamilies = map[string]benchFamily{
	"block1": {code: func(idx int) string {
		return fmt.Sprintf(`#include <cub/block/block_reduce.cuh>
#include "value.cuh"
constexpr int K = %d;
extern "C" __global__ void k(const int* in, int* out) {
	using R = cub::BlockReduce<int, 128>;
	__shared__ typename R::TempStorage tmp;
	int s = R(tmp).Sum(in[threadIdx.x] * K);
	if (threadIdx.x == 0) out[0] = s + VALUE;
}
`, idx+1)
	}, want: func(idx, value int) int { return (idx+1)*127*128/2 + value }},
	"device": {code: func(idx int) string {
		return fmt.Sprintf(`#include <cub/device/dispatch/kernels/reduce.cuh>
#include <cub/device/dispatch/kernels/scan.cuh>
#include <cuda/std/functional>
#include "value.cuh"
constexpr int K = %d;
using Policy = cub::AgentReducePolicy<128, 4, int, 4, cub::BLOCK_REDUCE_WARP_REDUCTIONS, cub::LOAD_DEFAULT>;
using Agent = cub::detail::reduce::AgentReduce<Policy, const int*, int*, int, ::cuda::std::plus<int>, int>;
static_assert(Policy::BLOCK_THREADS == 128, "the benchmark launches 128 threads");
extern "C" __global__ void k(const int* in, int* out) {
	__shared__ typename Agent::TempStorage tmp;
	int s = Agent(tmp, in, ::cuda::std::plus<int>{}).ConsumeRange(0, 1024);
	if (threadIdx.x == 0) out[0] = s * K + VALUE;
}
`, idx+1)
	}, want: func(idx, value int) int { return (idx+1)*1023*1024/2 + value }},
	"thrust": {code: func(idx int) string {
		return fmt.Sprintf(`#include <thrust/tuple.h>
#include <thrust/pair.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include "value.cuh"
constexpr int K = %d;
struct timesK { __host__ __device__ int operator()(int x) const { return x * K; } };
extern "C" __global__ void k(const int* in, int* out) {
	if (threadIdx.x != 0) return;
	auto it = thrust::make_transform_iterator(thrust::counting_iterator<int>(0), timesK{});
	thrust::plus<int> plus;
	int s = 0;
	for (int i = 0; i < 1024; ++i) s = plus(s, it[i]);
	thrust::tuple<int, int> t(s, VALUE);
	thrust::pair<int, int> p(thrust::get<0>(t), thrust::get<1>(t));
	out[0] = p.first + p.second + in[0];
}
`, idx+1)
	}, want: func(idx, value int) int { return (idx+1)*1023*1024/2 + value }},
	"libcu": {code: func(idx int) string {
		return fmt.Sprintf(`#include <cuda/std/array>
#include <cuda/std/complex>
#include <cuda/atomic>
#include <cuda/std/span>
#include "value.cuh"
constexpr int K = %d;
extern "C" __global__ void k(const int* in, int* out) {
	cuda::std::array<int, 4> a{in[0], in[1], in[2], in[3]};
	cuda::std::span<const int, 4> s(a);
	cuda::std::complex<float> c{float(s[1]), float(s[2])};
	cuda::std::complex<float> d = c * c;
	cuda::atomic_ref<int, cuda::thread_scope_device> r(out[0]);
	r.fetch_add(int(d.imag()) * K + s[3]);
	if (threadIdx.x == 0) r.fetch_add(VALUE);
}
`, idx+1)
	}, want: func(idx, value int) int { return 128*(4*(idx+1)+3) + value }},
}

// TestServeBenchClient is one client process of the compile server's
// benchmark (bench/serve-device.sh, bench/RESULTS-cuda.md "Compile
// server"): it builds kernel $KCACHE_SERVE_BENCH of family
// $KCACHE_SERVE_BENCH_FAMILY (value.cuh in $KCACHE_SERVE_BENCH_HDR)
// through cuda.Cache on an empty cache, so the build is a cold miss: the
// cache computes the key, sends the compile to the server where
// KCACHE_SERVE says so (or compiles with this process's NVRTC), and
// stores the image. It then runs the kernel, checks its result, and prints
// how long Module took and whether the server built it. With
// KCACHE_SERVE_BENCH_KEYONLY set it only computes the key.
func TestServeBenchClient(t *testing.T) {
	idx, err := strconv.Atoi(os.Getenv("KCACHE_SERVE_BENCH"))
	if err != nil {
		t.Skip("run by bench/serve-device.sh")
	}
	at := processClock()
	entered := at()
	gpu := requireGPU(t)
	family := os.Getenv("KCACHE_SERVE_BENCH_FAMILY")
	hdr := os.Getenv("KCACHE_SERVE_BENCH_HDR")
	logs := &syncbuf.Buffer{}
	gpuAt := at()
	c := newBenchCache(t, gpu, filepath.Join(os.Getenv("KCACHE_SERVE_BENCH_DIR"), "cache"), logs)
	src, check := benchSource(t, gpu, family, hdr, idx)
	cacheAt := at()
	start := time.Now()
	benchStart.Store(start.UnixNano())
	if os.Getenv("KCACHE_SERVE_BENCH_KEYONLY") != "" {
		key, err := c.Key(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("BENCH family=%s kernel=%d key_ms=%.1f\n", family, idx, ms(time.Since(start)))
		_ = key
		return
	}
	m, err := c.Module(context.Background(), src)
	took := time.Since(start)
	if err != nil {
		fmt.Printf("BENCH-ERROR family=%s kernel=%d: %.300s\n", family, idx, strings.ReplaceAll(err.Error(), "\n", " | "))
		t.Fatal(err)
	}
	defer m.Release()
	if m.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("outcome %v, want built (a cold miss)", m.Outcome)
	}
	moduleAt := at()
	check(m)
	checkedAt := at()
	served := os.Getenv(ServeEnv) != "" && !strings.Contains(logs.String(), "not through the compile server")
	why := ""
	if i := strings.Index(logs.String(), "reason="); i >= 0 && !served && os.Getenv(ServeEnv) != "" {
		why = strings.SplitN(logs.String()[i:], "\n", 2)[0]
	}
	fmt.Printf("BENCH family=%s kernel=%d serve=%q served=%v module_ms=%.1f %s %s\n", family, idx, os.Getenv(ServeEnv), served, ms(took), servedPhases(logs.String()), why)
	fmt.Printf("BENCH-PROCESS entered_at_ms=%.1f gpu_at_ms=%.1f cache_at_ms=%.1f module_end_at_ms=%.1f checked_at_ms=%.1f\n",
		entered, gpuAt, cacheAt, moduleAt, checkedAt)
}

// processClock returns a clock of milliseconds since the script started
// this process ($KCACHE_SERVE_BENCH_T0, Unix nanoseconds): where a
// client's time goes outside Module (its start, CUDA's initialisation, the
// launch, and, from the script's total, its exit).
func processClock() func() float64 {
	t0, _ := strconv.ParseInt(os.Getenv("KCACHE_SERVE_BENCH_T0"), 10, 64)
	return func() float64 { return ms(time.Since(time.Unix(0, t0))) }
}

// servedPhases picks out of the client's log where its time went in a
// compile the server made: when the compile was sent ahead of the key
// (early_at_ms, from Module's start), when the reply was in (served_at_ms),
// when the image was stored (stored_at_ms; then it is loaded), and the
// fields of the reply's line (the request's making, the wait, the
// server's compile, the probe of predefined macros).
func servedPhases(log string) string {
	var out []string
	for line := range strings.Lines(log) {
		at := ""
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "t_ms=") {
				at = strings.TrimPrefix(f, "t_ms=")
			}
		}
		switch {
		case strings.Contains(line, "ahead of its key"):
			out = append(out, "early_at_ms="+at)
		case strings.Contains(line, `msg="kcache: built"`):
			out = append(out, "stored_at_ms="+at)
		case strings.Contains(line, "compiled by the compile server"):
			out = append(out, "served_at_ms="+at)
			for _, f := range strings.Fields(line) {
				for _, k := range []string{"server_compile_ms=", "request_ms=", "wait_ms=", "probe_ms=", "pch="} {
					if strings.HasPrefix(f, k) {
						out = append(out, f)
					}
				}
			}
		}
	}
	return strings.Join(out, " ")
}

// benchStart is when the benchmark client called Module: its log's times
// are from it (t_ms).
var benchStart atomic.Int64 // UnixNano

// benchSource is kernel idx of family, and the check of its result.
func benchSource(t *testing.T, gpu *Context, family, hdr string, idx int) (Source, func(*CachedModule)) {
	if family == "block4" {
		// Kernel idx is cubKernel idx%100 (its tile), its sum offset by
		// idx/100: kernels of one tile and another offset are as large as
		// each other, and new to NVRTC, its back end's cache included.
		src, block, items := cubKernelSource(t, hdr, idx%100)
		salt := idx / 100
		src.Code = bytes.Replace(src.Code, []byte("s + VALUE;"), fmt.Appendf(nil, "s + VALUE + %d;", salt), 1)
		src.Path = fmt.Sprintf("cub%d.cu", idx)
		return src, func(m *CachedModule) { runCUBKernel(t, gpu, m, block, items, 1+salt) }
	}
	f, ok := benchFamilies[family]
	if !ok {
		t.Fatalf("no benchmark family %q", family)
	}
	src := Source{Code: []byte(f.code(idx)), Path: fmt.Sprintf("%s%d.cu", family, idx), Options: append(cubOptions(t), "-I", hdr)}
	return src, func(m *CachedModule) {
		if got := runBench(t, gpu, m); got != f.want(idx, 1) {
			t.Fatalf("%s kernel %d wrote %d, want %d", family, idx, got, f.want(idx, 1))
		}
	}
}

// runBench launches k on one block of 128 threads with in[i] = i and
// returns out[0].
func runBench(t *testing.T, gpu *Context, m *CachedModule) int {
	in := make([]byte, 4*1024)
	for i := range 1024 {
		binary.LittleEndian.PutUint32(in[4*i:], uint32(i))
	}
	din, dout := devBuffer(t, gpu, in), devBuffer(t, gpu, make([]byte, 16))
	if err := launchK(gpu, m, 128, din, dout); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 16)
	if err := gpu.CopyFromDevice(out, dout); err != nil {
		t.Fatal(err)
	}
	return int(int32(binary.LittleEndian.Uint32(out)))
}

// newBenchCache is newServeCache with its log kept, at debug level, in
// logs: the cache says there why it compiled here.
func newBenchCache(t *testing.T, gpu *Context, dir string, logs *syncbuf.Buffer) *Cache {
	cfg, err := kcache.LoadConfig(func(c *kcache.Config) { c.Dir = dir; c.Persistent = true })
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Float64("t_ms", ms(time.Since(time.Unix(0, benchStart.Load()))))
			}
			return a
		}}))
	c, err := NewCache(gpu, kcache.New(cfg, logger, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st}), CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// TestServePhases measures, in one process and without the server, where
// the time of the benchmark's compiles goes (bench/serve-device.sh, phase
// "phases"; family $KCACHE_SERVE_PHASES): what a new process pays before
// its first compile (the key, the check of NVRTC's predefined macros, its
// first module load), then NVRTC with automatic PCH as a server's worker
// runs it (the same options, -pch -pch-messages=true): the kernel that
// makes the PCH, then new kernels of the same headers, each split into the
// program's creation, nvrtcCompileProgram and nvrtcGetCUBIN; with
// $KCACHE_SERVE_PHASES_TIME set, NVRTC's own split of a PCH'd and an
// unPCH'd compile (-time) is appended to that file.
func TestServePhases(t *testing.T) {
	family := os.Getenv("KCACHE_SERVE_PHASES")
	if family == "" {
		t.Skip("run by bench/serve-device.sh")
	}
	gpu := requireGPU(t)
	if os.Getenv("KCACHE_SERVE_PHASES_LOCK") != "" {
		// As a worker whose compiles all run on one thread (one malloc
		// arena) would.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	ctx := context.Background()
	c := newServeCache(t, gpu, t.TempDir())
	src, _ := benchSource(t, gpu, family, os.Getenv("KCACHE_SERVE_BENCH_HDR"), phaseBase+10)
	p, err := c.plan(src)
	if err != nil {
		t.Fatal(err)
	}
	phase := func(name string, f func() error) {
		start := time.Now()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fmt.Printf("PHASE family=%s %s_ms=%.1f\n", family, name, ms(time.Since(start)))
	}
	phase("key", func() error { _, err := c.key(ctx, src, p); return err })
	a, _ := c.assumptions(ctx, src, p)
	fmt.Printf("PHASE family=%s assumptions=%d\n", family, len(a.notPredefined)+len(a.optionDecides))
	phase("probe", func() error { return c.checkAssumptions(ctx, src, p) })
	var images [][]byte
	for idx := phaseBase + 10; idx < phaseBase+15; idx++ {
		images = append(images, phaseCompile(t, gpu, family, p, idx, "-pch", "-pch-messages=true"))
	}
	for i, im := range images[:2] {
		phase(fmt.Sprintf("load%d", i), func() error {
			m, err := gpu.LoadModule(im, nil)
			if err == nil {
				m.Unload()
			}
			return err
		})
	}
	if family == "block4" { // the in-process figures were of such small tiles
		for idx := phaseBase; idx < phaseBase+3; idx++ {
			phaseCompile(t, gpu, family, p, idx, "-pch", "-pch-messages=true")
		}
	}
	if extra := os.Getenv("KCACHE_SERVE_PHASES_AB"); extra != "" {
		phaseAB(t, gpu, family, p, strings.Fields(extra))
	}
	// The floor of a PCH'd compile over these headers: a kernel that
	// uses none of them (the PCH's load and the rest of NVRTC's fixed
	// work).
	for i := range 2 {
		trivial := Source{Code: []byte(leadingLines(src.Code) + fmt.Sprintf("extern \"C\" __global__ void k(int* out) { out[0] = VALUE + %d; }\n", i)),
			Path: fmt.Sprintf("trivial%d.cu", phaseBase+i), Options: src.Options}
		phaseCompileSource(t, family, trivial, p, "-pch", "-pch-messages=true")
	}
	if f := os.Getenv("KCACHE_SERVE_PHASES_TIME"); f != "" {
		phaseCompile(t, gpu, family, p, phaseBase+15, "-pch", "-time="+f)
		phaseCompile(t, gpu, family, p, phaseBase+17, "-time="+f)
		phaseCompile(t, gpu, family, p, phaseBase+16, "-pch", "-fdevice-time-trace="+f+".trace16.json")
	}
}

// phaseBase numbers TestServePhases' kernels apart from the benchmark
// clients' (and each run's apart from another's, with
// $KCACHE_SERVE_PHASES_BASE), so that none finds its back end's output in
// NVRTC's cache (~/.nv/ComputeCache) from another.
var phaseBase = func() int {
	if n, err := strconv.Atoi(os.Getenv("KCACHE_SERVE_PHASES_BASE")); err == nil {
		return n
	}
	return 800
}()

// phaseCompile compiles kernel idx of family with p's options and extra,
// prints how long each step took, and returns the image.
func phaseCompile(t *testing.T, gpu *Context, family string, p plan, idx int, extra ...string) []byte {
	src, _ := benchSource(t, gpu, family, os.Getenv("KCACHE_SERVE_BENCH_HDR"), idx)
	return phaseCompileSource(t, family, src, p, extra...)
}

// leadingLines is the preprocessor lines that open code: the headers
// NVRTC's automatic PCH holds.
func leadingLines(code []byte) string {
	var b strings.Builder
	for line := range strings.Lines(string(code)) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// phaseCompileSource is phaseCompile of src.
func phaseCompileSource(t *testing.T, family string, src Source, p plan, extra ...string) []byte {
	var before, after syscall.Rusage
	memBefore := phaseMemory()
	stopSampling := sampleVM()
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	prog, err := NewProgram(src.Code, programName(src), src.Headers)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Destroy()
	created := time.Now()
	if err := prog.Compile(append(slices.Clone(p.options), extra...)); err != nil {
		t.Errorf("%s with %q: %v", programName(src), extra, err) // an option this NVRTC lacks
		return nil
	}
	compiled := time.Now()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	peakVM := stopSampling()
	advised := ""
	if phaseAdvisor != nil {
		n, size, err := phaseAdvisor.advise()
		advised = fmt.Sprintf(" thp_advised=%d/%dMB err=%v", n, size>>20, err)
	}
	if os.Getenv("KCACHE_SERVE_PHASES_MEM") != "" {
		fmt.Printf("PHASE-MEM family=%s kernel=%s before{%s} after{%s} vm_peak_mb=%d%s\n", family, strings.TrimSuffix(programName(src), ".cu"),
			memBefore, phaseMemory(), peakVM>>20, advised)
	}
	code, err := prog.CUBIN()
	if err != nil {
		t.Fatal(err)
	}
	log, _ := prog.Log()
	pch := "none"
	switch {
	case strings.Contains(log, "creating precompiled header"):
		pch = "created"
	case strings.Contains(log, "using precompiled header"):
		pch = "used"
	}
	cpu := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	fmt.Printf("PHASE family=%s kernel=%s opts=%q create_ms=%.1f compile_ms=%.1f cubin_ms=%.1f bytes=%d pch=%s minflt=%d majflt=%d cpu_ms=%.1f sys_ms=%.1f\n", family,
		strings.TrimSuffix(programName(src), ".cu"), strings.Join(extra, " "), ms(created.Sub(start)), ms(compiled.Sub(created)), ms(time.Since(compiled)), len(code), pch,
		after.Minflt-before.Minflt, after.Majflt-before.Majflt, ms(cpu(after)-cpu(before)), ms(time.Duration(after.Stime.Nano()-before.Stime.Nano())))
	return code
}

// phaseAdvisor, with $KCACHE_SERVE_PHASES_THP set, asks for huge pages on
// the large anonymous mappings after every compile of TestServePhases, as
// a worker does (ServeCompiler.HugePages).
var phaseAdvisor = func() *hugePageAdvisor {
	if os.Getenv("KCACHE_SERVE_PHASES_THP") == "" {
		return nil
	}
	return newHugePageAdvisor(hugePageMin)
}()

// phaseMemory describes this process's memory for TestServePhases: its
// resident and anonymous memory, what of it is in huge pages, and its
// large anonymous mappings (count and size).
func phaseMemory() string {
	roll, _ := os.ReadFile("/proc/self/smaps_rollup")
	var fields []string
	for line := range strings.Lines(string(roll)) {
		f := strings.Fields(line)
		if len(f) == 3 && (f[0] == "Rss:" || f[0] == "Anonymous:" || f[0] == "AnonHugePages:") {
			fields = append(fields, strings.TrimSuffix(f[0], ":")+"_mb="+strconv.Itoa(atoiOr0(f[1])>>10))
		}
	}
	maps, _ := os.ReadFile("/proc/self/maps")
	var total uintptr
	big := anonymousMappings(maps, hugePageMin)
	for _, r := range big {
		total += r[1] - r[0]
	}
	return strings.Join(fields, " ") + fmt.Sprintf(" anon_maps=%d anon_maps_mb=%d", len(big), total>>20)
}

func atoiOr0(s string) int { n, _ := strconv.Atoi(s); return n }

// sampleVM samples the process's virtual size every millisecond until the
// function it returns is called, which returns the largest growth seen:
// memory NVRTC maps during a compile and unmaps before it returns.
func sampleVM() func() int64 {
	vm := func() int64 {
		b, _ := os.ReadFile("/proc/self/statm")
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0
		}
		pages, _ := strconv.ParseInt(f[0], 10, 64)
		return pages * int64(os.Getpagesize())
	}
	base := vm()
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if v := vm() - base; v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	return func() int64 { close(stop); <-done; return peak.Load() }
}

// abKernel is phaseAB's kernel i: for block4 all of one tile (20), each
// with its own offset; new to NVRTC in each run of its own phaseBase.
func abKernel(i int) int { return phaseBase*100 + 20 + 100*i }

// phaseAB compiles new kernels of family with the worker's options, then
// with extra added, alternately (A B B A ...: the same PCH, the same
// process, so only the options differ), and one kernel both ways, first
// with extra, to check that extra leaves the image as it was.
func phaseAB(t *testing.T, gpu *Context, family string, p plan, extra []string) {
	a := []string{"-pch", "-pch-messages=true"}
	b := append(slices.Clone(a), extra...)
	for i := range 12 {
		opts := a
		if i%4 == 1 || i%4 == 2 {
			opts = b
		}
		phaseCompile(t, gpu, family, p, abKernel(i), opts...)
	}
	withExtra := phaseCompile(t, gpu, family, p, abKernel(12), b...)
	without := phaseCompile(t, gpu, family, p, abKernel(12), a...)
	fmt.Printf("PHASE-AB family=%s extra=%q same_image=%v bytes=%d/%d\n", family, strings.Join(extra, " "), bytes.Equal(withExtra, without), len(withExtra), len(without))
}
