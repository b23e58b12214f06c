package deps

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The CCCL kernels of testdata/cccl are header-heavy CUDA sources of the
// kinds users compile through NVRTC: CUB block, warp and device
// algorithms, Thrust (tuple, complex, sequential algorithms in device
// code), libcu++ and cooperative groups. Some do not compile under NVRTC
// (Thrust's <memory>, CUB's host-side dispatch); their dependencies up to
// the failure still count.

// nvrtc13Input is the scan input cuda.Cache builds for a program under
// NVRTC 13.0 (cuda/scaninput.go): it searches no directory of its own and
// holds one header.
func nvrtc13Input(src []byte, path, wd string, args []string) Input {
	// As cuda's nvrtc13: the key assumes NVRTC predefines no name the
	// scan meets undefined, which the cache then asks NVRTC; and it lexes
	// as C++17, its default and the dialect these tests ask for.
	return Input{Source: src, Path: path, WorkDir: wd, Args: args, CompleteSearchPath: true, VerifiesPredefines: true, LexesCPlusPlus: true, CompilerHeaders: []string{"__nv_nvrtc_builtin_header.h"},
		// A few of the names NVRTC's built-in header defines
		// (cuda/scaninput.go holds them all).
		CompilerMacros: []string{"NV_*", "CUDART_VERSION", "assert", "cudaStreamLegacy", "va_start"}}
}

// ccclDir returns testdata/cccl, found from the working directory
// whether a test binary runs in this package's directory (go test) or in
// the repository's root (a binary carried to the GPU machine), or else
// beside this source file.
func ccclDir(t testing.TB) string {
	t.Helper()
	candidates := []string{"testdata/cccl", "deps/testdata/cccl"}
	if _, file, _, ok := runtime.Caller(0); ok {
		candidates = append(candidates, filepath.Join(filepath.Dir(file), "testdata", "cccl"))
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return c
		}
	}
	t.Fatalf("testdata/cccl not found from %v", candidates)
	return ""
}

// ccclKernels returns the kernels of testdata/cccl by name.
func ccclKernels(t *testing.T) map[string][]byte {
	files, err := filepath.Glob(filepath.Join(ccclDir(t), "*.cu"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no kernels in testdata/cccl: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// nvrtcTrace is what NVRTC 13.0 opened for each kernel, recorded on the
// GPU machine by an LD_PRELOAD shim (bench/nvrtc/trace.py): the ground
// truth for NVRTC, which cannot list its dependencies.
type nvrtcTrace map[string]struct {
	RC     any      `json:"nvrtc_rc"`
	Opened []string `json:"nvrtc_opened"`
	NVCCM  []string `json:"nvcc_M"`
}

// TestCCCLAgainstNVRTC checks the scanner against what NVRTC 13.0 and
// nvcc -M read for the CCCL kernels: every header either lists under the
// toolkit's include directory must be a dependency, and no kernel may be
// refused. KCACHE_CUDA_INCLUDE names the toolkit's include directory
// (/usr/local/cuda/include on the GPU machine, or a copy of it);
// KCACHE_NVRTC_TRACE names a recorded trace, whose paths under
// KCACHE_TRACE_ROOT (default: the include directory's real path) are read
// under KCACHE_CUDA_INCLUDE. Where nvcc is installed, nvcc -M is run too.
func TestCCCLAgainstNVRTC(t *testing.T) {
	inc := os.Getenv("KCACHE_CUDA_INCLUDE")
	if inc == "" {
		t.Skip("KCACHE_CUDA_INCLUDE is not set")
	}
	var trace nvrtcTrace
	if f := os.Getenv("KCACHE_NVRTC_TRACE"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &trace); err != nil {
			t.Fatal(err)
		}
	}
	realInc, err := filepath.EvalSymlinks(inc)
	if err != nil {
		t.Fatal(err)
	}
	root := os.Getenv("KCACHE_TRACE_ROOT")
	if root == "" {
		root = realInc
	}
	nvcc, _ := exec.LookPath("nvcc")
	dir := t.TempDir()
	// nvcc includes cuda_runtime.h in every host compile, which NVRTC
	// does not: the files it lists for an empty source are left out.
	implicit := map[string]bool{}
	if nvcc != "" {
		empty := filepath.Join(dir, "empty.cu")
		if err := os.WriteFile(empty, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range nvccDeps(t, nvcc, dir, empty, inc) {
			implicit[f] = true
		}
	}
	args := []string{"-I" + inc + "/cccl", "-I" + inc, "-std=c++17", "-arch=sm_90"}
	s := NewScanner(nil)
	names := []string{}
	kernels := ccclKernels(t)
	for n := range kernels {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		src := kernels[name]
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, src, 0o644); err != nil {
				t.Fatal(err)
			}
			_, tr, err := s.Scan(context.Background(), nvrtc13Input(src, name, dir, args))
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			// No CCCL header expands __DATE__: a key that holds the day
			// rebuilds the kernel every day. thrust_seq's Thrust headers
			// spell the pieces of __DATE__ within parentheses (D, A, T
			// and E, as template parameters), where a paste may take
			// them, and so it keeps the day.
			date := slices.ContainsFunc(tr, func(d Dependency) bool { return d.Rule == RuleClock })
			if date != (name == "thrust_seq.cu") {
				t.Errorf("the key holds the day: %v", date)
			}
			have := keyedFiles(tr)
			var lists []string
			if k, ok := trace[name]; ok {
				missed := missedFiles(t, have, k.Opened, root, realInc, "NVRTC opens")
				lists = append(lists, sizeNote("NVRTC opened", len(underRoot(k.Opened, root, realInc)), missed))
			}
			if nvcc != "" {
				var listed []string
				for _, f := range nvccDeps(t, nvcc, dir, path, inc) {
					if !implicit[f] {
						listed = append(listed, f)
					}
				}
				// nvcc searches the toolkit's include directory before
				// the -I ones, NVRTC only these: where CCCL's copy of a
				// header (cccl/nv/target) is keyed, nvcc's reading
				// the toolkit's own copy (nv/target) is no miss.
				asNVCC := maps.Clone(have)
				for rel := range sameUnderCCCL(have, realInc) {
					asNVCC[filepath.Join(realInc, rel)] = true
				}
				missed := missedFiles(t, asNVCC, listed, realInc, realInc, "nvcc -M lists")
				lists = append(lists, sizeNote("nvcc -M lists", len(listed), missed))
			}
			t.Logf("key holds %d files under the include directory; %s", countUnder(have, realInc), strings.Join(lists, "; "))
		})
	}
}

// keyedFiles returns the real paths of the files a trace keys.
func keyedFiles(tr []Dependency) map[string]bool {
	have := map[string]bool{}
	for _, d := range tr {
		if d.Rule != RuleAbsent {
			if real, err := filepath.EvalSymlinks(d.Path); err == nil {
				have[real] = true
			}
		}
	}
	return have
}

// underRoot returns the files of a trace under root that are regular
// files at the same place under local (NVRTC also opens directories).
func underRoot(files []string, root, local string) []string {
	var out []string
	for _, f := range files {
		rel, ok := strings.CutPrefix(f, root+"/")
		if !ok {
			continue
		}
		if fi, err := os.Stat(filepath.Join(local, rel)); err == nil && fi.Mode().IsRegular() {
			out = append(out, f)
		}
	}
	return out
}

// sameUnderCCCL returns, relative to inc, the names of the files keyed
// under inc/cccl, as they would be named directly under inc.
func sameUnderCCCL(have map[string]bool, inc string) map[string]bool {
	out := map[string]bool{}
	for f := range have {
		if rel, ok := strings.CutPrefix(f, inc+"/cccl/"); ok {
			out[rel] = true
		}
	}
	return out
}

// missedFiles reports each file of listed (under root, read at the same
// place under local) that the key lacks, and returns how many.
func missedFiles(t *testing.T, have map[string]bool, listed []string, root, local, who string) int {
	t.Helper()
	missed := 0
	for _, f := range listed {
		rel, ok := strings.CutPrefix(f, root+"/")
		if !ok {
			continue
		}
		p, err := filepath.EvalSymlinks(filepath.Join(local, rel))
		if err != nil {
			continue // a directory the trace stat'ed, gone here
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if !have[p] {
			missed++
			t.Errorf("%s %s; the key lacks it", who, rel)
		}
	}
	return missed
}

func countUnder(have map[string]bool, root string) int {
	n := 0
	for f := range have {
		if strings.HasPrefix(f, root+"/") {
			n++
		}
	}
	return n
}

func sizeNote(who string, n, missed int) string {
	b, _ := json.Marshal(map[string]int{"files": n, "missed": missed})
	return who + " " + string(b)
}

// TestCCCLNoRefusal scans the CCCL kernels against a toolkit's include
// directory with NVRTC 13's search, and requires that none is refused
// and no search directory is widened into the key; it reports the keys
// that hold the day.
func TestCCCLNoRefusal(t *testing.T) {
	inc := os.Getenv("KCACHE_CUDA_INCLUDE")
	if inc == "" {
		t.Skip("KCACHE_CUDA_INCLUDE is not set")
	}
	args := []string{"-I" + inc + "/cccl", "-I" + inc, "-std=c++17", "-arch=sm_90"}
	dir := t.TempDir()
	for name, src := range ccclKernels(t) {
		_, tr, err := NewScanner(nil).Scan(context.Background(), nvrtc13Input(src, name, dir, args))
		if errors.Is(err, ErrUncacheable) || err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, d := range tr {
			if d.Rule == RuleManifest {
				t.Errorf("%s: the key widened to %s", name, d.Path)
				break
			}
			if d.Name == DateHeader {
				// The words of CUB 13 (single letters among them) and its
				// generic pastes meet paste.go's conditions for __DATE__:
				// the key holds the day, and the kernel is built once a
				// day. Reported, not judged: the rule is the sound one.
				t.Logf("%s: the key holds the day", name)
			}
		}
	}
}

// nvccDeps returns the real paths of the files under the toolkit's
// include directory inc that nvcc -M lists for path.
func nvccDeps(t *testing.T, nvcc, dir, path, inc string) []string {
	t.Helper()
	cmd := exec.Command(nvcc, "-M", "-std=c++17", "-arch=sm_90", "-I", inc+"/cccl", "-I", inc, path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nvcc -M: %v", err)
	}
	realInc, _ := filepath.EvalSymlinks(inc)
	var files []string
	// Not a bufio.Scanner: a CUB kernel's rule is one line of some
	// 70 kB once its continuations are joined, past the Scanner's limit.
	for _, line := range strings.Split(strings.ReplaceAll(string(out), "\\\n", " "), "\n") {
		_, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			real, err := filepath.EvalSymlinks(f)
			if err == nil && strings.HasPrefix(real, realInc+"/") {
				files = append(files, real)
			}
		}
	}
	return files
}

// BenchmarkCCCLKey is the key of the CUB block-reduce kernel under NVRTC
// 13's model, against a toolkit's include directory
// (KCACHE_CUDA_INCLUDE): cold (a new Scanner, as a new process without
// recorded dependencies) and warm (the same Scanner again).
func BenchmarkCCCLKey(b *testing.B) {
	inc := os.Getenv("KCACHE_CUDA_INCLUDE")
	if inc == "" {
		b.Skip("KCACHE_CUDA_INCLUDE is not set")
	}
	src, err := os.ReadFile(filepath.Join(ccclDir(b), "cub_block_reduce.cu"))
	if err != nil {
		b.Fatal(err)
	}
	in := nvrtc13Input(src, "k.cu", b.TempDir(), []string{"-I" + inc + "/cccl", "-I" + inc, "-std=c++17", "-arch=sm_90"})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := NewScanner(nil).Scan(context.Background(), in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		s := NewScanner(nil)
		for b.Loop() {
			if _, _, err := s.Scan(context.Background(), in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
