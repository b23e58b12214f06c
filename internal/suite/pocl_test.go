package suite

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/kcache/kcache/opencl"
)

// TestSuiteOnPoCL builds and runs every case on the first OpenCL device
// and requires its check to pass. It skips where no OpenCL runtime loads,
// unless KCACHE_REQUIRE_REAL=1.
func TestSuiteOnPoCL(t *testing.T) {
	// A private PoCL kernel cache: builds must not be served from (or
	// pollute) the user's cache. PoCL reads this when the platform is first
	// initialised, so it must be set before the first OpenCL call.
	t.Setenv("POCL_CACHE_DIR", t.TempDir())
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
