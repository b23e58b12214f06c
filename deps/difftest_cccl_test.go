package deps_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcache/kcache/deps"
)

// The differential check on CCCL-style trees, against clang-15's own
// preprocessor in CUDA device mode, with Debian's Thrust and CUB 1.17
// (libthrust-dev, libcub-dev) under /usr/include. clang needs the CUDA
// runtime's headers to compile these kernels, which Debian does not
// ship with them; -MG lists each missing header by its name and goes on,
// as if it were empty, so the list still holds every file clang reads.

// clangCUDA is the clang command line of the check: device-side only,
// without the CUDA installation clang would otherwise look for.
var clangCUDA = []string{"-x", "cuda", "-nocudainc", "-nocudalib", "--cuda-gpu-arch=sm_70", "--cuda-device-only", "-std=c++17"}

// ccclLocalKernels are the kernels of testdata/cccl that need only CUB and
// Thrust: block reduce, scan and radix sort, warp reduce, device reduce
// and scan, and Thrust's tuple, complex and sequential algorithms
// (transform, sort, reduce) in device code.
var ccclLocalKernels = []string{"cub_block_reduce.cu", "cub_block_scan_warp.cu", "cub_device_reduce_scan.cu", "cub_radix_sort.cu", "thrust_complex.cu", "thrust_seq.cu", "thrust_tuple.cu"}

// requireCCCL skips unless clang-15 and Debian's Thrust and CUB are
// installed; under KCACHE_REQUIRE_REAL=1 it fails instead.
func requireCCCL(t *testing.T) string {
	t.Helper()
	clang := requireClang(t)
	for _, f := range []string{"/usr/include/thrust/version.h", "/usr/include/cub/version.cuh"} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
				t.Fatalf("KCACHE_REQUIRE_REAL=1 but %s is missing (apt-get install libthrust-dev libcub-dev)", f)
			}
			t.Skipf("%s is missing (apt-get install libthrust-dev libcub-dev)", f)
		}
	}
	return clang
}

// clangSearchDirs returns the directories clang searches on its own for
// the CUDA command line, in order (clang -E -v).
func clangSearchDirs(t *testing.T, clang string) []string {
	t.Helper()
	cmd := exec.Command(clang, append(append([]string{}, clangCUDA...), "-E", "-v", "-")...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("clang -E -v: %v: %s", err, out)
	}
	_, list, ok := strings.Cut(string(out), "#include <...> search starts here:\n")
	list, _, ok2 := strings.Cut(list, "End of search list.")
	if !ok || !ok2 {
		t.Fatalf("clang -E -v printed no search list: %s", out)
	}
	var dirs []string
	for _, d := range strings.Fields(list) {
		dirs = append(dirs, filepath.Clean(d))
	}
	return dirs
}

// clangCUDADeps returns the files clang -M -MG lists for path: those
// that exist, absolute, and the names of those that do not.
func clangCUDADeps(t *testing.T, clang, dir, path string, args []string) (files, missing []string) {
	t.Helper()
	argv := append(append(append([]string{}, clangCUDA...), args...), "-M", "-MG", path)
	cmd := exec.Command(clang, argv...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("clang -M: %v: %s", err, stderr.String())
	}
	for _, f := range makePrereqs(string(out)) {
		if !filepath.IsAbs(f) {
			f = dir + "/" + f
		}
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
			continue
		}
		files = append(files, f)
	}
	return files, missing
}

// ccclInput is the scan input of a kernel compiled as clangCUDA does:
// clang searches its own directories after the options', and no other.
// The tests verify the key's assumptions about predefined names against
// clang's own list (clangPredefined), as the cuda package does against
// NVRTC.
func ccclInput(src []byte, path, wd string, sys, args []string) deps.Input {
	return deps.Input{Source: src, Path: path, WorkDir: wd, Args: args, SystemDirs: sys, CompleteSearchPath: true,
		Trigraphs: deps.TrigraphsOff, VerifiesPredefines: true}
}

// clangPredefined returns every macro clang predefines for clangCUDA's
// options (clang -dM -E).
func clangPredefined(t *testing.T, clang, dir string) map[string]bool {
	t.Helper()
	argv := append(append([]string{}, clangCUDA...), "-dM", "-E", "-o", "-", os.DevNull)
	cmd := exec.Command(clang, argv...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("clang -dM -E: %v: %s", err, out)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "#define" {
			name, _, _ := strings.Cut(f[1], "(")
			names[name] = true
		}
	}
	if len(names) < 100 {
		t.Fatalf("clang -dM -E listed %d macros: %s", len(names), out)
	}
	return names
}

// checkAssumptions fails for every name the key assumes the compiler does
// not predefine that clang does predefine, and returns how many there
// were.
func checkAssumptions(t *testing.T, trace []deps.Dependency, predefined map[string]bool) int {
	t.Helper()
	n := 0
	for _, d := range trace {
		if d.Rule == deps.RuleNotPredefined {
			n++
			if predefined[d.Path] {
				t.Errorf("the key assumes %s is not predefined; clang predefines it", d.Path)
			}
		}
	}
	return n
}

// TestDifferentialCCCL checks CUB and Thrust kernels against clang-15:
// the key must hold every file clang reads (no misses), key every header
// clang looked for and did not find as an absent place, and be neither
// refused nor widened to a search directory. It reports how many files
// each key holds against clang's list.
func TestDifferentialCCCL(t *testing.T) {
	clang := requireCCCL(t)
	sys := clangSearchDirs(t, clang)
	dir := t.TempDir()
	predefined := clangPredefined(t, clang, dir)
	s := deps.NewScanner(nil)
	for _, name := range ccclLocalKernels {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "cccl", name))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, src, 0o644); err != nil {
				t.Fatal(err)
			}
			files, missing := clangCUDADeps(t, clang, dir, path, nil)
			_, trace, err := s.Scan(context.Background(), ccclInput(src, name, dir, sys, nil))
			if errors.Is(err, deps.ErrUncacheable) || err != nil {
				t.Fatalf("scan: %v", err)
			}
			have, absent := map[fileID]bool{}, map[string]bool{}
			for _, d := range trace {
				switch {
				case d.Rule == deps.RuleManifest:
					t.Errorf("the key widened to %s", d.Path)
				case d.Rule == deps.RuleAbsent:
					absent[filepath.Base(d.Path)] = true
				default:
					if id, ok := idOf(d.Path); ok {
						have[id] = true
					}
				}
			}
			mainID, _ := idOf(path)
			for _, f := range files {
				if id, ok := idOf(f); ok && id != mainID && !have[id] {
					t.Errorf("clang reads %s; the key lacks it", f)
				}
			}
			for _, m := range missing {
				if !absent[filepath.Base(m)] {
					t.Errorf("clang looked for %s and found none; the key holds no absent place of that name", m)
				}
			}
			assumed := checkAssumptions(t, trace, predefined)
			t.Logf("key holds %d files, clang -M lists %d (and %d it did not find); it assumes %d names are not predefined",
				len(have), len(files)-1, len(missing), assumed)
		})
	}
}

// TestCCCLKeyIgnoresUnrelatedHeader is issue 18's precision target: a
// header in the user's -I directory that no CUB kernel includes can be
// edited, created or removed without changing the kernel's key, while an
// edit to a header the kernel does include changes it.
func TestCCCLKeyIgnoresUnrelatedHeader(t *testing.T) {
	clang := requireCCCL(t)
	sys := clangSearchDirs(t, clang)
	dir := t.TempDir()
	user := filepath.Join(dir, "include")
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	unrelated := filepath.Join(user, "unrelated.h")
	mine := filepath.Join(user, "mine.h")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(unrelated, "#define UNRELATED 1\n")
	write(mine, "#define MINE 1\n")
	src := []byte("#include \"mine.h\"\n#include <cub/block/block_reduce.cuh>\n#include <thrust/tuple.h>\n__global__ void k(int *d) { d[0] = MINE; }\n")
	in := ccclInput(src, "k.cu", dir, sys, []string{"-I", user})
	key := func() string {
		t.Helper()
		// A new Scanner each time, as a new process: nothing is
		// trusted from memory.
		hs, _, err := deps.NewScanner(nil).Scan(context.Background(), in)
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		var b strings.Builder
		for _, h := range hs {
			b.WriteString(h.Name + "=" + h.Digest.String() + "\n")
		}
		return b.String()
	}
	before := key()
	write(unrelated, "#define UNRELATED 2 /* edited */\n")
	write(filepath.Join(user, "new.h"), "#define NEW 1\n")
	if after := key(); after != before {
		t.Fatalf("editing and adding headers no kernel includes changed the key")
	}
	if err := os.Remove(unrelated); err != nil {
		t.Fatal(err)
	}
	if after := key(); after != before {
		t.Fatalf("removing a header no kernel includes changed the key")
	}
	write(mine, "#define MINE 2\n")
	if after := key(); after == before {
		t.Fatalf("editing a header the kernel includes left the key unchanged")
	}
}
