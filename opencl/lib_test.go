package opencl

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestLoadMissingLibrary(t *testing.T) {
	err := load([]string{"libkcache-no-such-opencl.so.1"})
	if !errors.Is(err, ErrNoRuntime) {
		t.Fatalf("load = %v, want ErrNoRuntime", err)
	}
	if !strings.Contains(err.Error(), "apt-get install ocl-icd-libopencl1 pocl-opencl-icd") {
		t.Errorf("error %q does not say what to install", err)
	}
}

// TestLoadNoPlatform runs a child process whose ICD loader sees an empty
// vendor directory, the state of a machine with the loader but no driver.
func TestLoadNoPlatform(t *testing.T) {
	if os.Getenv("KCACHE_OPENCL_CHILD") == "noplatform" {
		err := Load()
		t.Logf("Load: %v", err)
		if !errors.Is(err, ErrNoRuntime) || !strings.Contains(err.Error(), "pocl-opencl-icd") {
			t.Fatalf("Load with no vendors = %v, want ErrNoRuntime naming the driver package", err)
		}
		return
	}
	requireOpenCL(t)
	empty := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadNoPlatform$", "-test.v")
	cmd.Env = append(os.Environ(),
		"KCACHE_OPENCL_CHILD=noplatform",
		"OCL_ICD_VENDORS="+empty,      // ocl-icd
		"OPENCL_VENDOR_PATH="+empty,   // Khronos loader
		"POCL_CACHE_DIR="+t.TempDir(), // never shared between processes
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestLoadNoPlatform") {
		t.Fatalf("child did not run the check:\n%s", out)
	}
}
