package opencl

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// requireOpenCL skips the test where no OpenCL runtime is installed, unless
// KCACHE_REQUIRE_REAL=1 asks for a hard failure (CI machines that must run
// the real thing).
func requireOpenCL(t testing.TB) {
	t.Helper()
	if err := Load(); err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("KCACHE_REQUIRE_REAL=1 but OpenCL is unavailable: %v", err)
		}
		t.Skipf("OpenCL unavailable: %v", err)
	}
}

// testSource holds every kernel the tests run, so one build serves them all:
// PoCL takes 0.5 s or more per build.
const testSource = `
__kernel void saxpy(__global const float* x, __global const float* y, __global float* out,
                    const float alpha, const uint n) {
	size_t i = get_global_id(0);
	if (i < n) out[i] = alpha * x[i] + y[i];
}

__kernel void blocksum(__global const int* in, __global int* out, __local int* scratch,
                       const int scale, const long bias) {
	size_t l = get_local_id(0);
	scratch[l] = in[get_global_id(0)];
	barrier(CLK_LOCAL_MEM_FENCE);
	for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
		if (l < s) scratch[l] += scratch[l + s];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	if (l == 0) out[get_group_id(0)] = scratch[0] * scale + (int)bias;
}
`

// fixture is the shared test state: a context, queue and built program on the
// first device.
type fixture struct {
	dev  Device
	ctx  *Context
	q    *Queue
	prog *Program
}

var sharedFixture struct {
	once sync.Once
	f    *fixture
	err  error
}

// testFixture returns the shared fixture, building it on first use. It is
// never released: it lives as long as the test process, and leaving
// TestMain free keeps it available to other test files of the package.
func testFixture(t testing.TB) *fixture {
	t.Helper()
	requireOpenCL(t)
	sharedFixture.once.Do(func() { sharedFixture.f, sharedFixture.err = newFixture() })
	if sharedFixture.err != nil {
		t.Fatal(sharedFixture.err)
	}
	return sharedFixture.f
}

func newFixture() (*fixture, error) {
	devs, err := AllDevices()
	if err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("no OpenCL devices")
	}
	e := &fixture{dev: devs[0]}
	if e.ctx, err = NewContext(e.dev); err != nil {
		return nil, err
	}
	if e.q, err = e.ctx.NewQueueFlags(e.dev, QueueProfiling); err != nil {
		return nil, err
	}
	if e.prog, err = e.ctx.ProgramWithSource(testSource); err != nil {
		return nil, err
	}
	if err := e.prog.Build(nil, "-cl-std=CL1.2"); err != nil {
		return nil, err
	}
	return e, nil
}

// runSaxpy runs the saxpy kernel k on n elements through q and checks every
// result. It returns an error rather than failing, so goroutines can use it.
func runSaxpy(ctx *Context, q *Queue, k *Kernel, n int, alpha float32) error {
	x, y := make([]float32, n), make([]float32, n)
	for i := range n {
		x[i], y[i] = float32(i), float32(2*i+1)
	}
	bx, err := ctx.NewBufferFrom(MemReadOnly, casedata.F32Bytes(x))
	if err != nil {
		return err
	}
	defer bx.Release()
	by, err := ctx.NewBufferFrom(MemReadOnly, casedata.F32Bytes(y))
	if err != nil {
		return err
	}
	defer by.Release()
	out, err := ctx.NewBuffer(MemWriteOnly, 4*n)
	if err != nil {
		return err
	}
	defer out.Release()
	for i, a := range []any{bx, by, out, alpha, uint32(n)} {
		if err := k.SetArg(i, a); err != nil {
			return err
		}
	}
	ev, err := q.Run(k, []int{n}, nil)
	if err != nil {
		return err
	}
	defer ev.Release()
	if err := ev.Wait(); err != nil {
		return err
	}
	got := make([]byte, 4*n)
	if err := q.Read(out, 0, got); err != nil {
		return err
	}
	for i, v := range casedata.F32s(got) {
		if want := alpha*x[i] + y[i]; v != want {
			return fmt.Errorf("saxpy[%d] = %v, want %v", i, v, want)
		}
	}
	return nil
}

// TestMain gives the test process a private PoCL kernel cache, so that the
// tests neither read nor fill the user's. PoCL reads the variable once, at
// its first call, and keeps the directory for the life of the process.
//
// The directory is not removed at exit: PoCL's worker threads may still be
// compiling a launched kernel's code there as the process ends, and PoCL
// aborts the process when that fails. Each run removes instead what runs
// that ended more than an hour ago left.
func TestMain(m *testing.M) {
	removeOldScratch(os.TempDir(), "kcache-opencl-pocl-", time.Hour)
	dir, err := os.MkdirTemp("", "kcache-opencl-pocl-")
	if err == nil {
		os.Setenv("POCL_CACHE_DIR", dir)
	}
	os.Exit(m.Run())
}

// removeOldScratch removes the directories in parent named prefix* that
// were last changed longer than age ago.
func removeOldScratch(parent, prefix string, age time.Duration) {
	old, _ := filepath.Glob(filepath.Join(parent, prefix+"*"))
	for _, d := range old {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > age {
			os.RemoveAll(d)
		}
	}
}
