package cuda

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/keyparts"
)

// newProcessEnv names the phase a child of TestCCCLNewProcess runs.
const newProcessEnv = "KCACHE_CCCL_PHASE"

// ccclKernel is one kernel of TestCCCLNewProcess: its source is code, or
// the file of deps/testdata/cccl named file.
type ccclKernel struct {
	name, file, code string
}

// ccclKernels are the CCCL kernels TestCCCLNewProcess measures: CUB's
// block algorithms, Thrust, libcu++, and two NVRTC 13 rejects (a Thrust
// algorithm with thrust::seq, CUB's device-level algorithms), kept so
// that a later NVRTC that builds them is measured too. Each takes int
// pointers and is launched as one block of 128 threads.
var ccclKernels = []ccclKernel{
	{name: "cub_block_reduce", code: cubSource},
	{name: "cub_radix_sort", file: "cub_radix_sort.cu"},
	{name: "cub_block_scan_warp", file: "cub_block_scan_warp.cu"},
	{name: "thrust_tuple", file: "thrust_tuple.cu"},
	{name: "libcudacxx", file: "libcudacxx.cu"},
	{name: "thrust_seq_reduce", code: thrustSeqReduceSource},
	{name: "cub_device_reduce_scan", file: "cub_device_reduce_scan.cu"},
}

// thrustSeqReduceSource is a Thrust algorithm in device code with the
// fewest headers: thrust::reduce and thrust::transform under thrust::seq.
const thrustSeqReduceSource = `#include <thrust/execution_policy.h>
#include <thrust/reduce.h>
#include <thrust/transform.h>
#include <thrust/functional.h>
extern "C" __global__ void k(int* d) {
  if (threadIdx.x) return;
  thrust::transform(thrust::seq, d, d + 8, d, thrust::negate<int>());
  d[8] = thrust::reduce(thrust::seq, d, d + 8);
}
`

// source returns the kernel's code.
func (k ccclKernel) source(t testing.TB) []byte {
	if k.file == "" {
		return []byte(k.code)
	}
	code, err := os.ReadFile(filepath.Join(ccclTestdata(t), k.file))
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// ccclTestdata returns deps/testdata/cccl, found from the working
// directory whether a test binary runs in the package's directory (go
// test) or in the repository's root (a binary carried to the GPU
// machine), or else beside this source file.
func ccclTestdata(t testing.TB) string {
	t.Helper()
	candidates := []string{"../deps/testdata/cccl", "deps/testdata/cccl"}
	if _, file, _, ok := runtime.Caller(0); ok {
		candidates = append(candidates, filepath.Join(filepath.Dir(file), "..", "deps", "testdata", "cccl"))
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return c
		}
	}
	t.Fatalf("deps/testdata/cccl not found from %v", candidates)
	return ""
}

// TestCCCLNewProcess measures, on the GPU machine, the first CCCL kernel
// of a new process (issue 18): cold (NVRTC through the cache), warm (the
// disk tier, its key from the dependency record of an earlier process),
// and the floor (its CUBIN read from a file, loaded and launched); each
// in a process of its own, after the CUDA context is made. It reports, it
// does not judge: set KCACHE_CCCL_MEASURE=N to run it, N warm and floor
// rounds, interleaved; KCACHE_CCCL_KERNELS (names, comma-separated)
// picks kernels of ccclKernels, all by default; KCACHE_CCCL_TRACE=N
// adds N traced warm starts of each (tracedWarmStart). The figures go to
// the test log as JSON lines.
func TestCCCLNewProcess(t *testing.T) {
	if os.Getenv(newProcessEnv) != "" {
		cccPhase(t, os.Getenv(newProcessEnv))
		return
	}
	rounds := 0
	fmt.Sscan(os.Getenv("KCACHE_CCCL_MEASURE"), &rounds)
	if rounds == 0 {
		t.Skip("a measurement: set KCACHE_CCCL_MEASURE=N")
	}
	requireGPU(t)
	dir := t.TempDir()
	writeUserHeader(t, dir)
	for _, k := range ccclKernels {
		if only := os.Getenv("KCACHE_CCCL_KERNELS"); only != "" && !slices.Contains(strings.Split(only, ","), k.name) {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, k.name+".cu"), k.source(t), 0o644); err != nil {
			t.Fatal(err)
		}
		measureCCCL(t, dir, k.name, rounds)
	}
}

// measureCCCL runs the phases of one kernel and logs its figures.
func measureCCCL(t *testing.T, dir, kernel string, rounds int) {
	run := func(phase string, env ...string) cccResult {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCCCLNewProcess$", "-test.v")
		cmd.Env = append(os.Environ(), newProcessEnv+"="+phase, "KCACHE_CCCL_DIR="+dir, "KCACHE_CCCL_KERNEL="+kernel)
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", kernel, phase, err, out)
		}
		if os.Getenv("KCACHE_TEST_DEBUG") != "" {
			for _, line := range splitLines(out) {
				if strings.Contains(string(line), `msg="deps: `) {
					t.Logf("%s %s: %s", kernel, phase, line)
				}
			}
		}
		var r cccResult
		for _, line := range splitLines(out) {
			if json.Unmarshal(line, &r) == nil && r.Phase == phase {
				return r
			}
		}
		t.Fatalf("%s %s: no result in\n%s", kernel, phase, out)
		return r
	}
	cold := run("cold")
	t.Logf("%s", mustJSON(cold))
	if cold.Error != "" {
		return // NVRTC rejects it: nothing to warm
	}
	traces := 0
	fmt.Sscan(os.Getenv("KCACHE_CCCL_TRACE"), &traces)
	for i := range traces {
		traceCCCL(t, dir, kernel, i == 0)
	}
	var warm, open, key, lookup, files, floor, alt []float64
	altEnv := os.Getenv("KCACHE_CCCL_ALT_ENV") // a variable a second warm phase of each round runs with
	for range rounds {
		w, f := run("warm"), run("floor")
		if altEnv != "" {
			a := run("warm", altEnv)
			alt = append(alt, a.MS)
			t.Logf("alt %s", mustJSON(a))
		}
		if w.Outcome != kcache.OutcomeDisk.String() {
			t.Errorf("%s: warm outcome %s, want disk", kernel, w.Outcome)
		}
		warm, open, key, lookup = append(warm, w.MS), append(open, w.OpenMS), append(key, w.KeyMS), append(lookup, w.LookupMS)
		files, floor = append(files, w.FilesMS), append(floor, f.MS)
		t.Logf("%s %s", mustJSON(w), mustJSON(f))
	}
	mw, mf := median(warm), median(floor)
	if len(alt) > 0 {
		t.Logf(`{"summary_alt":true,"kernel":%q,"env":%q,"warm_ms":%.2f,"alt_ms":%.2f,"floor_ms":%.2f}`, kernel, altEnv, mw, median(alt), mf)
	}
	t.Logf(`{"summary":true,"kernel":%q,"cold_ms":%.1f,"headers":%d,"warm_ms":%.2f,"open_ms":%.2f,"key_ms":%.2f,"lookup_ms":%.2f,"files_ms":%.2f,"floor_ms":%.2f,"warm_over_floor":%.2f}`,
		kernel, cold.MS, cold.Headers, mw, median(open), median(key), median(lookup), median(files), mf, mw/mf)
}

// traceCCCL runs the "trace" phase of kernel in a new process and logs
// its steps; only the first (first set) writes a runtime trace, which
// slows what it traces.
func traceCCCL(t *testing.T, dir, kernel string, first bool) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCCCLNewProcess$", "-test.v")
	cmd.Env = append(os.Environ(), newProcessEnv+"=trace", "KCACHE_CCCL_DIR="+dir, "KCACHE_CCCL_KERNEL="+kernel)
	if !first {
		cmd.Env = append(cmd.Env, "KCACHE_CCCL_RTRACE=")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s trace: %v\n%s", kernel, err, out)
	}
	for _, line := range splitLines(out) {
		if strings.Contains(string(line), `"trace":`) {
			t.Logf("%s", line)
		}
	}
}

// cccResult is one phase's figures.
type cccResult struct {
	Phase   string  `json:"phase"`
	Kernel  string  `json:"kernel"`
	Outcome string  `json:"outcome,omitempty"`
	Error   string  `json:"error,omitempty"` // NVRTC's, when it rejects the kernel
	Headers int     `json:"headers,omitempty"`
	MS      float64 `json:"ms"` // from the cache's opening (the file's read, for the floor) to the completed launch
	// OpenMS is the part of MS that opened the disk tier and made the
	// cuda.Cache (the device's, driver's and NVRTC's identity): what
	// `kcache demo` counts as set-up.
	OpenMS float64 `json:"open_ms,omitempty"`
	// KeyMS and LookupMS are the key alone and the binary tiers' lookup
	// alone, timed again in the same process after the warm start, in a
	// new cache.
	KeyMS    float64 `json:"key_ms,omitempty"`
	LookupMS float64 `json:"lookup_ms,omitempty"`
	// FilesMS is the search for the compiler's files (compilerFiles)
	// done again, IdentityMS the rest of the device's identity, both
	// timed after the warm start.
	FilesMS    float64 `json:"files_ms,omitempty"`
	IdentityMS float64 `json:"identity_ms,omitempty"`
	// Faults and CPUMS are the process's page faults (minor) and CPU
	// time, every thread's, over MS.
	Faults int64   `json:"faults"`
	CPUMS  float64 `json:"cpu_ms"`
	// FDSize is the size of the process's descriptor table before the
	// phase's cache is made, after the warm start, and after the key
	// timed again (fdroom.go in package deps says why it matters).
	FDSize [3]int `json:"fd_size"`
}

// fdTableSize returns the FDSize line of /proc/self/status, or 0.
func fdTableSize() int {
	status, _ := os.ReadFile("/proc/self/status")
	_, rest, _ := strings.Cut(string(status), "\nFDSize:")
	line, _, _ := strings.Cut(rest, "\n")
	n, _ := strconv.Atoi(strings.TrimSpace(line))
	return n
}

// rusage returns the process's resource usage so far.
func rusage() syscall.Rusage {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru
}

// cccPhase is a child's side of TestCCCLNewProcess.
func cccPhase(t *testing.T, phase string) {
	if phase == "trace" {
		// What a new process pays before any cache: the driver's and
		// NVRTC's loading (requireGPU does both, once).
		t0 := time.Now()
		Init()
		t1 := time.Now()
		LoadNVRTC()
		processStart = map[string]float64{"driver_load_ms": msBetween(t0, t1), "nvrtc_load_ms": msBetween(t1, time.Now())}
	}
	gpu := requireGPU(t)
	dir, kernel := os.Getenv("KCACHE_CCCL_DIR"), os.Getenv("KCACHE_CCCL_KERNEL")
	code, err := os.ReadFile(filepath.Join(dir, kernel+".cu"))
	if err != nil {
		t.Fatal(err)
	}
	inc := "/usr/local/cuda/include"
	src := Source{Code: code, Options: []string{"-I" + inc + "/cccl", "-I" + inc, "-I" + dir, "-std=c++17"}}
	in, err := gpu.Alloc(512 * 4)
	if err != nil {
		t.Fatal(err)
	}
	out, err := gpu.Alloc(512 * 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := gpu.Memset(in, 1, 512*4); err != nil {
		t.Fatal(err)
	}
	launch := func(f *Function) {
		args := []any{in}
		if kernel == "cub_block_reduce" {
			args = append(args, out)
		}
		if err := f.Launch(nil, Dim(1), Dim(128), 0, args...); err != nil {
			t.Fatal(err)
		}
		if err := gpu.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	r := cccResult{Phase: phase, Kernel: kernel}
	r.FDSize[0] = fdTableSize()
	cubin := filepath.Join(dir, kernel+".cubin")
	ru0 := rusage()
	start := time.Now()
	ms := func() float64 { return float64(time.Since(start).Microseconds()) / 1000 }
	switch phase {
	case "trace":
		tracedWarmStart(t, gpu, dir, kernel, src, launch)
		return
	case "floor":
		image, err := os.ReadFile(cubin)
		if err != nil {
			t.Fatal(err)
		}
		m, err := gpu.LoadModule(image, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := m.Function("k")
		if err != nil {
			t.Fatal(err)
		}
		launch(f)
	default:
		c := newTestCache(t, gpu, filepath.Join(dir, "cache"))
		r.OpenMS = ms()
		m, err := c.Module(context.Background(), src)
		var ce *CompileError
		if phase == "cold" && errors.As(err, &ce) {
			r.Error, r.MS = firstError(ce.Log), ms()
			fmt.Println(mustJSON(r))
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := m.Function("k")
		if err != nil {
			t.Fatal(err)
		}
		launch(f)
		r.Outcome = m.Outcome.String()
		if phase == "cold" {
			if err := os.WriteFile(cubin, m.Image(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.MS = ms()
	r.FDSize[1] = fdTableSize()
	ru1 := rusage()
	r.Faults = ru1.Minflt - ru0.Minflt
	r.CPUMS = float64(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / 1e6
	if phase == "warm" && predefineProbes() != 0 {
		// The key's assumptions were checked when it was stored: a hit
		// asks NVRTC nothing.
		t.Errorf("%s: a warm start compiled %d predefine probes", kernel, predefineProbes())
	}
	if phase != "floor" {
		r.KeyMS, r.LookupMS, r.Headers = tracedKeyAndLookup(t, gpu, filepath.Join(dir, "cache"), src, kernel)
		r.FilesMS, r.IdentityMS = identityTimes(t, gpu)
		r.FDSize[2] = fdTableSize()
	}
	fmt.Println(mustJSON(r))
}

// predefineProbes counts the answers NVRTC gave this process about
// predefined macros (predefines.go): each cost a compile.
func predefineProbes() int {
	n := 0
	predefineChecks.Range(func(any, any) bool { n++; return true })
	return n
}

// keyAndLookup times the key of src alone and its lookup in the binary
// tiers alone, in a cache of its own over dir, and counts the key's
// headers.
func keyAndLookup(t *testing.T, gpu *Context, dir string, src Source) (keyMS, lookupMS float64, headers int) {
	c := newTestCache(t, gpu, dir)
	k0 := time.Now()
	key, err := c.Key(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	k1 := time.Now()
	r, pending, err := c.bins.Lookup(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	k2 := time.Now()
	if pending != nil {
		pending.Abort(nil)
	} else if len(r.Binary) == 0 {
		t.Fatal("empty hit")
	}
	return float64(k1.Sub(k0).Microseconds()) / 1000, float64(k2.Sub(k1).Microseconds()) / 1000, len(key.Image.Headers)
}

// tracedKeyAndLookup is keyAndLookup, under a runtime trace where
// KCACHE_CCCL_KEYTRACE names a directory: a key slower than 5 ms leaves
// its trace there, named by the kernel and the process, for a look at
// what stalled it.
func tracedKeyAndLookup(t *testing.T, gpu *Context, dir string, src Source, kernel string) (keyMS, lookupMS float64, headers int) {
	out := os.Getenv("KCACHE_CCCL_KEYTRACE")
	if out == "" {
		return keyAndLookup(t, gpu, dir, src)
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	keyMS, lookupMS, headers = keyAndLookup(t, gpu, dir, src)
	trace.Stop()
	if keyMS > 5 {
		name := filepath.Join(out, fmt.Sprintf("%s-%d.trace", kernel, os.Getpid()))
		if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return keyMS, lookupMS, headers
}

// identityTimes times a search for the compiler's files, as
// compilerFiles makes it once per process, and the rest of the device's
// identity.
func identityTimes(t *testing.T, gpu *Context) (filesMS, identityMS float64) {
	t0 := time.Now()
	files := keyparts.LibraryFiles(NVRTCLibrary(), "libnvrtc-builtins.so*")
	files = append(files, keyparts.LibraryFiles(DriverLibrary(),
		"libnvidia-ptxjitcompiler.so*", "libnvidia-nvvm.so*", "libnvidia-gpucomp.so*")...)
	files.Digest()
	t1 := time.Now()
	if _, err := deviceIdentity(gpu.Device()); err != nil {
		t.Fatal(err)
	}
	return float64(t1.Sub(t0).Microseconds()) / 1000, float64(time.Since(t1).Microseconds()) / 1000
}

// writeUserHeader writes the header cubSource includes from the user's
// directory, settled before any build reads it.
func writeUserHeader(t *testing.T, dir string) {
	if err := os.WriteFile(filepath.Join(dir, "mine.h"), []byte("#define MINE 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "mine.h"), old, old)
	time.Sleep(2100 * time.Millisecond) // past the too-new window of its ctime
}

// firstError returns the first line of a compiler's log that names an
// error, or its first line.
func firstError(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for _, l := range lines {
		if strings.Contains(l, "error") {
			return l
		}
	}
	return lines[0]
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := slices.Index(b, '\n')
		if i < 0 {
			return append(out, b)
		}
		out, b = append(out, b[:i]), b[i+1:]
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
