package keyparts_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/keyparts"
	"github.com/kcache/kcache/opencl"
)

// TestMain gives the test process a private PoCL kernel cache, so that
// PoCL neither reads nor fills the user's (see opencl's TestMain), except
// in TestPoCLTempDirReal's child, whose environment is the test's.
func TestMain(m *testing.M) {
	if _, child := os.LookupEnv(tempDirChild); child {
		os.Exit(m.Run())
	}
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

// TestPrefetchOpenCLDriver checks that a driver found in the background,
// with PoCL loaded, is the driver OpenCLDriver finds itself.
func TestPrefetchOpenCLDriver(t *testing.T) {
	pocl(t)
	t.Cleanup(keyparts.ResetOpenCLDriver)
	keyparts.ResetOpenCLDriver()
	want := keyparts.OpenCLDriver()
	if len(want.ICD) == 0 {
		t.Fatal("PoCL is loaded, but no driver was found")
	}
	keyparts.ResetOpenCLDriver()
	keyparts.PrefetchOpenCLDriver()
	keyparts.PrefetchOpenCLDriver() // a second, while the first may be under way, takes its answer
	if got := keyparts.OpenCLDriver(); !reflect.DeepEqual(got, want) {
		t.Errorf("prefetched driver:\n%v\nfound in the call:\n%v", got, want)
	}
}

// BenchmarkOpenCLDriver measures what finding the driver's files costs
// once per process (OpenCLDriver remembers it afterwards).
// Its "new-process" case also forgets the libraries' dynamic sections, as
// a new process has not read them.
func BenchmarkOpenCLDriver(b *testing.B) {
	pocl(b)
	b.Run("memoized-libraries", func(b *testing.B) {
		for b.Loop() {
			keyparts.ResetOpenCLDriver()
			keyparts.OpenCLDriver()
		}
	})
	b.Run("new-process", func(b *testing.B) {
		for b.Loop() {
			keyparts.ResetOpenCLDriver()
			keyparts.ResetDynSections()
			keyparts.OpenCLDriver()
		}
	})
}

// TestPoCLSplitsAsTheScanner builds, through PoCL, a kernel whose output
// says which headers and macros PoCL's compiler saw, with options whose
// split differs between PoCL and a shell: -I'inc' (PoCL searches a
// directory named 'inc', quotes and all), -I "sub dir" (PoCL searches
// " sub dir ", blanks and all) and -D "PICK(a, b)=b" (a quoted blank).
// The scanner, given the options split as OpenCLScan splits them for
// PoCL, must find the very headers the kernel reports, and a shell's
// split must not (or the test proves nothing).
func TestPoCLSplitsAsTheScanner(t *testing.T) {
	dev := pocl(t)
	wd := t.TempDir()
	t.Chdir(wd)
	files := map[string]string{
		"'inc'/h.h":      "#define V 1\n",
		"inc/h.h":        "#define V 2\n",
		" sub dir /h3.h": "#define U 100\n",
		"sub dir/h3.h":   "#define U 200\n",
		"h1.h":           "#define W 10\n",
		"h2.h":           "#define W 20\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(wd, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wd, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const src = `#include "h.h"
#include "h3.h"
#include PICK("h1.h", "h2.h")
kernel void k(global int *out) { out[0] = V; out[1] = U; out[2] = W; }
`
	const options = `-I'inc' -I "sub dir" -D "PICK(a, b)=b"`
	got := runPoCL(t, dev, src, options)
	if want := []int32{1, 100, 20}; !slices.Equal(got, want) {
		t.Fatalf("PoCL's kernel gives %v, want %v: PoCL no longer splits options as keyparts models it", got, want)
	}
	in, err := keyparts.OpenCLScan([]byte(src), options, keyparts.PoCL)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(wd, "'inc'/h.h"), filepath.Join(wd, " sub dir /h3.h"), filepath.Join(wd, "h2.h")}
	if found := scanned(t, in, wd); !sameFiles(found, want) {
		t.Errorf("the scanner found %q; PoCL compiled %q", found, want)
	}
	in.Args = deps.SplitOptions(options)
	if found := scanned(t, in, wd); sameFiles(found, want) {
		t.Errorf("a shell's split finds the same files %q: the test tells the splits apart no more", found)
	}
}

// scanned returns the files the scanner keys for in, run in wd.
func scanned(t *testing.T, in deps.Input, wd string) []string {
	t.Helper()
	in.WorkDir = wd
	_, trace, err := deps.NewScanner(nil).Scan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range trace {
		if d.Rule != deps.RuleAbsent {
			out = append(out, d.Path)
		}
	}
	return out
}

func sameFiles(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// buildsOnPoCL builds src with options for dev, and fails the test where
// PoCL refuses it: the sources' #error lines say which file PoCL read.
func buildsOnPoCL(t *testing.T, dev opencl.Device, src, options string) {
	t.Helper()
	ctx, err := opencl.NewContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Release()
	p, err := ctx.ProgramWithSource(src)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if err := p.Build(nil, options); err != nil {
		t.Fatalf("PoCL: %v", err)
	}
}

// keyHeaders returns the headers the key of src, built on PoCL with
// options in wd, holds, and the scan's error.
func keyHeaders(t *testing.T, src, options, wd string) ([]kcache.Header, error) {
	t.Helper()
	in, err := keyparts.OpenCLScan([]byte(src), options, keyparts.PoCL)
	if err != nil {
		t.Fatal(err)
	}
	in.WorkDir = wd
	headers, _, err := deps.NewScanner(nil).Scan(context.Background(), in)
	return headers, err
}

// runPoCL builds src with options for dev, runs its kernel k on one
// work-item and returns the three ints it writes.
func runPoCL(t *testing.T, dev opencl.Device, src, options string) []int32 {
	t.Helper()
	ctx, err := opencl.NewContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Release()
	prog, err := ctx.ProgramWithSource(src)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Release()
	if err := prog.Build(nil, options); err != nil {
		t.Fatalf("build: %v\n%s", err, prog.BuildLog(dev))
	}
	k, err := prog.NewKernel("k")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release()
	out, err := ctx.NewBuffer(opencl.MemWriteOnly, 12)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if err := k.SetArg(0, out); err != nil {
		t.Fatal(err)
	}
	q, err := ctx.NewQueue(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Release()
	ev, err := q.Run(k, []int{1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Release()
	if err := ev.Wait(); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 12)
	if err := q.Read(out, 0, b); err != nil {
		t.Fatal(err)
	}
	return []int32{int32(binary.LittleEndian.Uint32(b)), int32(binary.LittleEndian.Uint32(b[4:])), int32(binary.LittleEndian.Uint32(b[8:]))}
}

// TestPoCLExtraFlagsScanned checks, through PoCL, that the -I of
// POCL_EXTRA_BUILD_FLAGS is searched after the program's options, and
// that the scanner finds the header PoCL compiled.
func TestPoCLExtraFlagsScanned(t *testing.T) {
	dev := pocl(t)
	wd := t.TempDir()
	t.Chdir(wd)
	for name, content := range map[string]string{"a/x.h": "#define X 1\n", "extra/x.h": "#define X 2\n", "extra/y.h": "#define Y 30\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(wd, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wd, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("POCL_EXTRA_BUILD_FLAGS", "-I extra -DZ=400")
	const src = "#include \"x.h\"\n#include \"y.h\"\nkernel void k(global int *out) { out[0] = X; out[1] = Y; out[2] = Z; }\n"
	if got, want := runPoCL(t, dev, src, "-I a"), []int32{1, 30, 400}; !slices.Equal(got, want) {
		t.Fatalf("PoCL's kernel gives %v, want %v", got, want)
	}
	in, err := keyparts.OpenCLScan([]byte(src), "-I a", keyparts.PoCL)
	if err != nil {
		t.Fatal(err)
	}
	if found, want := scanned(t, in, wd), []string{filepath.Join(wd, "a/x.h"), filepath.Join(wd, "extra/y.h")}; !sameFiles(found, want) {
		t.Errorf("the scanner found %q; PoCL compiled %q", found, want)
	}
}
