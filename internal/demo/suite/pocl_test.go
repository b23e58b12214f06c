package suite

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/kcache/kcache/opencl"
)

// TestMain gives the test process a private PoCL kernel cache: builds must
// not be served from (or pollute) the user's cache. PoCL reads the variable
// once, when the platform is first initialised, and keeps using the
// directory for the life of the process, so it is made here, for the whole
// process, not per test (a per-test directory would be gone by the next
// run of `go test -count`).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kcache-suite-pocl-")
	if err == nil {
		os.Setenv("POCL_CACHE_DIR", dir)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestSuiteOnPoCL builds and runs every case on the first OpenCL device
// and requires its check to pass. It skips where no OpenCL runtime loads,
// unless KCACHE_REQUIRE_REAL=1.
func TestSuiteOnPoCL(t *testing.T) {
	skip := func(why error) {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("KCACHE_REQUIRE_REAL=1 but OpenCL is unavailable: %v", why)
		}
		t.Skipf("OpenCL unavailable: %v", why)
	}
	if err := opencl.Load(); err != nil {
		skip(err)
	}
	devs, err := opencl.AllDevices()
	if err != nil {
		t.Fatalf("OpenCL loaded but listing devices failed: %v", err)
	}
	if len(devs) == 0 {
		skip(errors.New("no OpenCL devices"))
	}
	dev := devs[0]
	t.Logf("device: %s (%s)", dev.Name(), dev.Version())
	for _, c := range All() {
		t.Run(c.Name, func(t *testing.T) {
			start := time.Now()
			if err := RunUncached(dev, c); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d launches, build+run+check %v", len(c.Launches), time.Since(start).Round(time.Millisecond))
		})
	}
}
