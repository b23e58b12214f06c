package keyparts_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache/internal/keyparts"
	"github.com/kcache/kcache/opencl"
)

// TestMain gives the test process a private PoCL kernel cache, so that
// PoCL neither reads nor fills the user's (see opencl's TestMain).
func TestMain(m *testing.M) {
	if dir, err := os.MkdirTemp("", "kcache-keyparts-pocl-"); err == nil {
		os.Setenv("POCL_CACHE_DIR", dir)
	}
	os.Exit(m.Run())
}

// pocl returns PoCL's first device, loading the driver. Without PoCL the
// test is skipped, except under KCACHE_REQUIRE_REAL=1, where it fails.
func pocl(t testing.TB) opencl.Device {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
		fail = t.Fatalf
	}
	if err := opencl.Load(); err != nil {
		fail("OpenCL unavailable: %v", err)
	}
	devs, err := opencl.AllDevices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.Platform().Name() == keyparts.PoCL {
			return d
		}
	}
	fail("no PoCL device among %d", len(devs))
	return opencl.Device{}
}

// TestRealPoCLDriver checks the files PoCL is made of, once loaded: its
// library, the LLVM and clang libraries it links, the device plugins it
// opened, its headers and its kernel library, and none of the test
// binary's own files.
func TestRealPoCLDriver(t *testing.T) {
	pocl(t)
	d := keyparts.OpenCLDriver()
	var icd, files []string
	for _, f := range d.ICD {
		icd = append(icd, f.Path)
	}
	for _, f := range d.Files {
		files = append(files, f.Path)
	}
	if !slices.ContainsFunc(icd, func(p string) bool { return strings.Contains(filepath.Base(p), "libpocl.so") }) {
		t.Errorf("ICD = %q, want libpocl", icd)
	}
	for _, want := range []string{"libpocl.so", "libLLVM-", "libclang-cpp.so", "libc.so.6", "libpocl-devices-pthread.so",
		"pocl/include/_kernel.h", "pocl/kernel-", "opencl-c.h"} {
		if !slices.ContainsFunc(files, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no file %q among the driver's %d", want, len(files))
		}
	}
	exe, _ := os.Executable()
	for _, not := range []string{exe, "libOpenCL.so"} {
		if slices.ContainsFunc(files, func(p string) bool { return strings.Contains(p, not) }) {
			t.Errorf("%s is the application's, not the driver's", not)
		}
	}
	t.Logf("%d files, digest %s", len(files), d.Files.Digest())
}

// BenchmarkOpenCLDriver measures what finding the driver's files costs
// once per process (OpenCLDriver remembers it afterwards).
func BenchmarkOpenCLDriver(b *testing.B) {
	pocl(b)
	for b.Loop() {
		keyparts.ResetOpenCLDriver()
		keyparts.OpenCLDriver()
	}
}
