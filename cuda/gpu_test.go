package cuda

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/internal/demo/casedata"
)

func TestDeviceIdentity(t *testing.T) {
	ctx := requireGPU(t)
	dev := ctx.Device()
	name, err := dev.Name()
	if err != nil || name == "" {
		t.Fatalf("Name = %q, %v", name, err)
	}
	arch, err := dev.Arch()
	if err != nil || !strings.HasPrefix(arch, "sm_") {
		t.Fatalf("Arch = %q, %v", arch, err)
	}
	mem, err := dev.TotalMemory()
	if err != nil || mem < 1<<30 {
		t.Fatalf("TotalMemory = %d, %v", mem, err)
	}
	drv, err := DriverVersion()
	if err != nil || drv < 11000 {
		t.Fatalf("DriverVersion = %d, %v", drv, err)
	}
	ma, mi, err := NVRTCVersion()
	if err != nil || ma < 11 {
		t.Fatalf("NVRTCVersion = %d.%d, %v", ma, mi, err)
	}
	lazy, _ := LazyLoading()
	t.Logf("%s %s, driver %d (%s), NVRTC %d.%d (%s), lazy loading %v", name, arch, drv, DriverLibrary(), ma, mi, NVRTCLibrary(), lazy)
	if !filepath.IsAbs(DriverLibrary()) || !filepath.IsAbs(NVRTCLibrary()) {
		t.Errorf("library paths not resolved: %q, %q", DriverLibrary(), NVRTCLibrary())
	}
}

// TestCompilerFiles checks the files that stand for the compiler in a key:
// NVRTC and its builtins library, the driver and its PTX compiler, and
// what they link (libc at least), each once.
func TestCompilerFiles(t *testing.T) {
	requireGPU(t)
	var paths []string
	for _, f := range compilerFiles() {
		paths = append(paths, f.Path)
	}
	t.Logf("%d files: %q", len(paths), paths)
	for _, want := range []string{"libnvrtc.so", "libnvrtc-builtins.so", "libcuda.so", "libnvidia-ptxjitcompiler.so", "libc.so.6"} {
		if !slices.ContainsFunc(paths, func(p string) bool { return strings.Contains(filepath.Base(p), want) }) {
			t.Errorf("no %s among the compiler's files", want)
		}
	}
}

// TestCompileAndLaunch runs NVRTC to CUBIN and to PTX, loads each, and
// launches both kinds of kernel.
func TestCompileAndLaunch(t *testing.T) {
	ctx := requireGPU(t)
	arch, _ := ctx.Device().Arch()
	for _, target := range []string{arch, "compute" + strings.TrimPrefix(arch, "sm")} {
		t.Run(target, func(t *testing.T) {
			p, err := NewProgram([]byte(saxpySource), "saxpy.cu", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Destroy()
			if err := p.AddNameExpression("scale<float, 3>"); err != nil {
				t.Fatal(err)
			}
			if err := p.Compile([]string{"-arch=" + target, "-std=c++17"}); err != nil {
				t.Fatal(err)
			}
			lowered, err := p.LoweredName("scale<float, 3>")
			if err != nil || !strings.HasPrefix(lowered, "_Z") {
				t.Fatalf("LoweredName = %q, %v", lowered, err)
			}
			var img []byte
			if strings.HasPrefix(target, "sm_") {
				img, err = p.CUBIN()
				if err == nil && !bytes.HasPrefix(img, []byte("\x7fELF")) {
					err = fmt.Errorf("CUBIN is not ELF")
				}
			} else {
				img, err = p.PTX()
				if _, cerr := p.CUBIN(); cerr == nil {
					t.Error("CUBIN for a virtual architecture")
				}
				if err == nil && !bytes.Contains(img, []byte(".target")) {
					err = fmt.Errorf("PTX has no .target")
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			m, err := ctx.LoadModule(img, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Unload()
			t.Logf("%s: %d bytes, JIT %.2f ms", target, len(img), m.JITMillis)
			runSaxpy(t, ctx, m, "saxpy", lowered)
		})
	}
}

// runSaxpy launches saxpy then scale<float,3> and checks y = 3*(2x+y).
func runSaxpy(t *testing.T, ctx *Context, m interface {
	Function(string) (*Function, error)
}, saxpy, scale string) {
	t.Helper()
	const n = 10000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), float32(n-i)
	}
	dx, dy := devBuffer(t, ctx, casedata.F32Bytes(x)), devBuffer(t, ctx, casedata.F32Bytes(y))
	fs, err := m.Function(saxpy)
	if err != nil {
		t.Fatal(err)
	}
	fk, err := m.Function(scale)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	if err := fs.Launch(s, Dim((n+255)/256), Dim(256), 0, float32(2), dx, dy, int32(n)); err != nil {
		t.Fatal(err)
	}
	if err := fk.Launch(s, Dim((n+255)/256), Dim(256), 0, dy, int32(n)); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*n)
	if err := ctx.CopyFromDevice(out, dy); err != nil {
		t.Fatal(err)
	}
	for i, v := range casedata.F32s(out) {
		if want := 3 * (2*x[i] + y[i]); v != want {
			t.Fatalf("y[%d] = %v, want %v", i, v, want)
		}
	}
}

func TestCompileError(t *testing.T) {
	requireGPU(t)
	p, err := NewProgram([]byte("__global__ void k() { undeclared_thing(); }"), "broken.cu", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Destroy()
	err = p.Compile(nil)
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Log, "undeclared_thing") || ce.Name != "broken.cu" {
		t.Fatalf("Compile = %v, want a CompileError whose log names the identifier", err)
	}
}

func TestLoadRejectsGarbage(t *testing.T) {
	ctx := requireGPU(t)
	_, err := ctx.LoadModule([]byte("\x7fELF this is no cubin"), nil)
	if err == nil || !IsImageRejected(err) {
		t.Fatalf("LoadModule(garbage) = %v, want a rejected image", err)
	}
	_, err = ctx.LoadModule([]byte(".version 99.0\n.target sm_90\n.address_size 64\n"), nil)
	var e *Error
	if !errors.As(err, &e) || !IsImageRejected(err) {
		t.Fatalf("LoadModule(bad PTX) = %v, want a rejected image", err)
	}
	t.Logf("bad PTX: %v", err)
}

// TestConcurrentGoroutines launches from many goroutines, which the Go
// scheduler spreads over OS threads: each call must make the context
// current on its own thread.
func TestConcurrentGoroutines(t *testing.T) {
	ctx := requireGPU(t)
	c := newTestCache(t, ctx, t.TempDir())
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := c.Module(context.Background(), Source{Code: []byte(saxpySource), NameExpressions: []string{"scale<float, 3>"}})
			if err != nil {
				errs <- err
				return
			}
			defer m.Release()
			const n = 4096
			data := make([]float32, n)
			for i := range data {
				data[i] = float32(i + g)
			}
			p, err := ctx.Alloc(4 * n)
			if err != nil {
				errs <- err
				return
			}
			defer ctx.Free(p)
			f, err := m.Function("scale<float, 3>")
			if err == nil {
				err = ctx.CopyToDevice(p, casedata.F32Bytes(data))
			}
			for range 20 {
				if err == nil {
					err = f.Launch(nil, Dim(n/256), Dim(256), 0, p, int32(n))
				}
			}
			out := make([]byte, 4*n)
			if err == nil {
				err = ctx.CopyFromDevice(out, p)
			}
			if err != nil {
				errs <- err
				return
			}
			for i, v := range casedata.F32s(out) {
				want := data[i]
				for range 20 {
					want *= 3
				}
				if v != want {
					errs <- fmt.Errorf("goroutine %d: v[%d] = %v, want %v", g, i, v, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := c.bins.Stats().Builds; n != 1 {
		t.Errorf("%d builds for one source from 32 goroutines, want 1", n)
	}
}

func newTestCache(t testing.TB, ctx *Context, dir string) *Cache {
	t.Helper()
	return newTestCacheMem(t, ctx, dir, true)
}

// newTestCacheMem is newTestCache with the object tier on or off; off,
// every request that no other holds goes to the disk tier.
func newTestCacheMem(t testing.TB, ctx *Context, dir string, inMemory bool) *Cache {
	t.Helper()
	cfg, err := kcache.LoadConfig(func(c *kcache.Config) { c.Dir = dir; c.Persistent = true; c.InMemory = inMemory })
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	bins := kcache.New(cfg, testLogger(), kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	c, err := NewCache(ctx, bins, CacheOptions{Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// testLogger is the test caches' logger: nil (none), or with
// KCACHE_TEST_DEBUG set, every debug line on stderr, which says for
// instance why a dependency record did not hold.
func testLogger() *slog.Logger {
	if os.Getenv("KCACHE_TEST_DEBUG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestCacheTiers goes through every tier: a build, a hit on the live
// module, a hit on disk in a new cache, and one in a new process, which
// must load the CUBIN without compiling.
func TestCacheTiers(t *testing.T) {
	ctx := requireGPU(t)
	dir := t.TempDir()
	src := Source{Code: []byte(saxpySource), NameExpressions: []string{"scale<float, 3>"}}
	c := newTestCache(t, ctx, dir)
	for i, want := range []kcache.Outcome{kcache.OutcomeBuilt, kcache.OutcomeMemory} {
		m, err := c.Module(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if m.Outcome != want || m.Format() != FormatCUBIN {
			t.Errorf("call %d: outcome %v format %s, want %v cubin", i, m.Outcome, m.Format(), want)
		}
		runSaxpy(t, ctx, m, "saxpy", "scale<float, 3>")
		m.Release()
	}
	c2 := newTestCache(t, ctx, dir)
	m, err := c2.Module(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if m.Outcome != kcache.OutcomeDisk {
		t.Errorf("new cache: outcome %v, want disk", m.Outcome)
	}
	runSaxpy(t, ctx, m, "saxpy", "scale<float, 3>")
	m.Release()

	cmd := exec.Command(os.Args[0], "-test.run=^TestCacheChild$", "-test.v")
	cmd.Env = append(os.Environ(), "KCACHE_CUDA_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCacheChild") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestCacheChild is TestCacheTiers's new process: a warm start loads
// the stored CUBIN and compiles nothing.
func TestCacheChild(t *testing.T) {
	dir := os.Getenv("KCACHE_CUDA_CHILD")
	if dir == "" {
		t.Skip("run by TestCacheTiers")
	}
	ctx := requireGPU(t)
	c := newTestCache(t, ctx, dir)
	m, err := c.Module(context.Background(), Source{Code: []byte(saxpySource), NameExpressions: []string{"scale<float, 3>"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	if m.Outcome != kcache.OutcomeDisk {
		t.Errorf("outcome %v, want disk", m.Outcome)
	}
	if n := c.bins.Stats().Builds; n != 0 {
		t.Errorf("%d builds in a warm process", n)
	}
	runSaxpy(t, ctx, m, "saxpy", "scale<float, 3>")
}

// TestCacheCompileErrorKept: a broken program's error carries NVRTC's log
// and is kept, so the second request does not compile again.
func TestCacheCompileErrorKept(t *testing.T) {
	ctx := requireGPU(t)
	c := newTestCache(t, ctx, t.TempDir())
	src := Source{Code: []byte("__global__ void k() { not_declared(); }"), Path: "broken.cu"}
	for i := range 2 {
		_, err := c.Module(context.Background(), src)
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(ce.Log, "not_declared") {
			t.Fatalf("call %d: %v, want a CompileError with the log", i, err)
		}
	}
	if st := c.bins.Stats(); st.FailedBuilds != 1 {
		t.Errorf("%d failed builds, want 1: the error was not kept", st.FailedBuilds)
	}
}

// TestCacheHeaderEdit: editing an included header rebuilds.
func TestCacheHeaderEdit(t *testing.T) {
	ctx := requireGPU(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "inc", "factor.h"), "#define FACTOR 3\n")
	src := Source{Code: []byte("#include \"factor.h\"\n" + strings.Replace(saxpySource, "v[i] * K", "v[i] * FACTOR", 1)),
		Options: []string{"-I", filepath.Join(dir, "inc")}, NameExpressions: []string{"scale<float, 3>"}}
	c := newTestCache(t, ctx, filepath.Join(dir, "cache"))
	m, err := c.Module(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	runSaxpy(t, ctx, m, "saxpy", "scale<float, 3>")
	m.Release()
	writeFile(t, filepath.Join(dir, "inc", "factor.h"), "#define FACTOR 3 /* same value, new text */\n")
	c2 := newTestCache(t, ctx, filepath.Join(dir, "cache"))
	m, err = c2.Module(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	if m.Outcome != kcache.OutcomeBuilt {
		t.Errorf("after editing the header: outcome %v, want built", m.Outcome)
	}
}

// memStore is a binary tier in memory whose entries a test can damage.
type memStore struct {
	mu sync.Mutex
	m  map[kcache.Digest][]byte
}

func (s *memStore) Get(_ context.Context, k *kcache.Key) (kcache.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[k.Digest()]
	if !ok {
		return kcache.Entry{}, kcache.ErrMiss
	}
	return kcache.Entry{Binary: b}, nil
}

func (s *memStore) Put(_ context.Context, k *kcache.Key, e kcache.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k.Digest()] = bytes.Clone(e.Binary)
	return nil
}

func (s *memStore) Delete(_ context.Context, k *kcache.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k.Digest())
	return nil
}

// TestCacheRejectedImage: an entry that decodes but that the driver
// refuses (a CUBIN damaged past its header) is deleted and rebuilt.
func TestCacheRejectedImage(t *testing.T) {
	ctx := requireGPU(t)
	st := &memStore{m: map[kcache.Digest][]byte{}}
	cfg, _ := kcache.LoadConfig(func(c *kcache.Config) { c.Persistent = false })
	bins := kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	src := Source{Code: []byte(saxpySource), NameExpressions: []string{"scale<float, 3>"}}
	for i, damage := range []func([]byte) []byte{
		func(b []byte) []byte { return b[:len(b)/2] }, // does not decode
		func(b []byte) []byte { // decodes; the driver refuses the code
			im, _ := decodeImage(b)
			im.code = append([]byte("\x7fELF"), bytes.Repeat([]byte{0xee}, 64)...)
			return im.encode()
		},
	} {
		c, err := NewCache(ctx, bins, CacheOptions{Environ: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		key, _ := c.Key(context.Background(), src)
		if _, ok := st.m[key.Digest()]; !ok {
			m, err := c.Module(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			m.Release()
			c.Close()
			c, _ = NewCache(ctx, bins, CacheOptions{Environ: []string{}})
		}
		st.m[key.Digest()] = damage(st.m[key.Digest()])
		m, err := c.Module(context.Background(), src)
		if err != nil {
			t.Fatalf("damage %d: %v", i, err)
		}
		if m.Outcome != kcache.OutcomeBuilt {
			t.Errorf("damage %d: outcome %v, want built", i, m.Outcome)
		}
		runSaxpy(t, ctx, m, "saxpy", "scale<float, 3>")
		m.Release()
		c.Close()
	}
}

func TestClassifyOutOfMemory(t *testing.T) {
	c := fakeCache(t, nil)
	for _, err := range []error{&Error{Code: ErrorOutOfMemory, Op: "cuModuleLoadDataEx"}, &NVRTCError{Code: int32(nvrtcOutOfMemory)}} {
		if got := c.classify(err); !errors.Is(got, kcache.ErrOutOfMemory) {
			t.Errorf("classify(%v) = %v, want ErrOutOfMemory", err, got)
		}
	}
	if got := c.classify(&CompileError{Log: "x"}); kcache.IsTransient(got) {
		t.Error("a compile error is transient: it would not be kept")
	}
	if got := c.classify(&Error{Code: ErrorInvalidImage}); !kcache.IsTransient(got) {
		t.Error("a rejected image is kept as an error")
	}
}

// TestNVRTCQuotedIncludes pins how NVRTC resolves a program's quoted
// includes, which the key's header scan follows: from the directory of the
// program's name, whatever the working directory.
func TestNVRTCQuotedIncludes(t *testing.T) {
	requireGPU(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src", "local.h"), "#define LOCAL 1\n")
	writeFile(t, filepath.Join(dir, "cwd.h"), "#define CWD 1\n")
	code := []byte("#include \"local.h\"\n__global__ void k(int* p) { *p = LOCAL; }\n")
	compile := func(name string) error {
		p, err := NewProgram(code, name, nil)
		if err != nil {
			return err
		}
		defer p.Destroy()
		return p.Compile(nil)
	}
	t.Chdir(dir)
	if err := compile(filepath.Join(dir, "src", "k.cu")); err != nil {
		t.Errorf("absolute program name: %v", err)
	}
	if err := compile(filepath.Join("src", "k.cu")); err != nil {
		t.Errorf("relative program name: %v", err)
	}
	if err := compile("k.cu"); err == nil {
		t.Errorf("bare program name found src/local.h from %s", dir)
	}
	code = []byte("#include \"cwd.h\"\n__global__ void k(int* p) { *p = CWD; }\n")
	if err := compile(filepath.Join(dir, "src", "k.cu")); err == nil {
		t.Errorf("a program in src/ found a header of the working directory, which its key does not hold")
	}
}

// TestCachePTXFallback takes the path of an NVRTC older than the device:
// PTX for the newest architecture NVRTC knows, stored, loaded by the
// driver's JIT, warm from disk too.
func TestCachePTXFallback(t *testing.T) {
	ctx := requireGPU(t)
	dir := t.TempDir()
	src := Source{Code: []byte(saxpySource), NameExpressions: []string{"scale<float, 3>"}}
	for i, want := range []kcache.Outcome{kcache.OutcomeBuilt, kcache.OutcomeDisk} {
		c := newTestCache(t, ctx, dir)
		c.id.ptx, c.id.reason = true, "NVRTC cannot compile for this device (test)"
		m, err := c.Module(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if m.Outcome != want || m.Format() != FormatPTX || !bytes.Contains(m.Image(), []byte(".target")) {
			t.Errorf("run %d: outcome %v format %s, want %v ptx", i, m.Outcome, m.Format(), want)
		}
		runSaxpy(t, ctx, m, "saxpy", "scale<float, 3>")
		m.Release()
	}
}

// TestFunctionHitAllocates nothing: a function looked up again, by name
// expression or by name, is a lock-free map hit.
func TestFunctionHitAllocatesNothing(t *testing.T) {
	ctx := requireGPU(t)
	c := newTestCache(t, ctx, t.TempDir())
	m, err := c.Module(context.Background(), Source{Code: []byte(saxpySource), NameExpressions: []string{"scale<float, 3>"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	for _, name := range []string{"scale<float, 3>", "saxpy"} {
		first, err := m.Function(name)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if f, _ := m.Function(name); f != first {
				t.Fatal("a second lookup returned another function")
			}
		})
		if allocs != 0 {
			t.Errorf("Function(%q) hit: %v allocations", name, allocs)
		}
	}
}
