package cuda

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// TestScanInputsModel: under NVRTC 13 the scan is told NVRTC searches no
// directory of its own and holds its built-in header and the program's
// headers in memory; under any other version (or none) it is not, and an
// include found nowhere keeps its old meaning. The program's name is its
// path for the search, unless -no-source-include.
func TestScanInputsModel(t *testing.T) {
	src := Source{Code: []byte("#include \"a.h\"\n"), Headers: []Header{{Name: "mem.h", Content: []byte("int m;")}}}
	p := plan{options: []string{"-arch=sm_90"}}
	ins := scanInputs(src, p)
	if len(ins) != 2 {
		t.Fatalf("%d inputs, want the program and its header", len(ins))
	}
	if ins[0].Path != "kcache.cu" {
		t.Errorf("the program's input has path %q; NVRTC searches the directory of its name, kcache.cu", ins[0].Path)
	}
	major, err := nvrtcMajor()
	for _, in := range ins {
		switch {
		case err == nil && major == 13:
			if !in.CompleteSearchPath || len(in.CompilerHeaders) != 2 || in.CompilerHeaders[0] != nvrtcBuiltinHeader || in.CompilerHeaders[1] != "mem.h" {
				t.Errorf("NVRTC 13: input %+v lacks the measured search model", in)
			}
		case in.CompleteSearchPath || in.CompilerHeaders != nil:
			t.Errorf("NVRTC %d (%v): input claims a search model that was not measured", major, err)
		}
	}
	p.options = append(p.options, "-no-source-include")
	if in := scanInputs(src, p)[0]; in.Path != "" {
		t.Errorf("-no-source-include: path %q, want none", in.Path)
	}
}

// cubSource is a CUB kernel that includes one header of the user's.
const cubSource = `#include "mine.h"
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void k(const int* in, int* out) {
  using R = cub::BlockReduce<int, 128>;
  __shared__ typename R::TempStorage t;
  int s = R(t).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) *out = s + MINE;
}
`

// TestCCCLCachedAndPrecise is issue 18's precision target through the
// cache, on the GPU machine: a CUB kernel is stored (a new cache finds it
// on disk), editing or adding a header of the user's -I directory that
// the kernel does not include rebuilds nothing, and editing the one it
// includes rebuilds it.
func TestCCCLCachedAndPrecise(t *testing.T) {
	gpu := requireGPU(t)
	inc := os.Getenv("KCACHE_CUDA_INCLUDE")
	if inc == "" {
		inc = "/usr/local/cuda/include"
	}
	if _, err := os.Stat(filepath.Join(inc, "cccl", "cub")); err != nil {
		t.Skipf("no CCCL under %s: %v", inc, err)
	}
	dir, user := t.TempDir(), t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(user, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		// A header read within the file system's timestamp tick of its
		// change is too new to trust, and a build from it is not
		// stored (issue 17): let it settle, as a user's edit would.
		time.Sleep(2100 * time.Millisecond)
	}
	write("mine.h", "#define MINE 1\n")
	write("unrelated.h", "#define UNRELATED 1\n")
	src := Source{Code: []byte(cubSource), Options: []string{"-I" + inc + "/cccl", "-I" + inc, "-I" + user, "-std=c++17"}}
	build := func(want kcache.Outcome, why string) {
		t.Helper()
		c := newTestCache(t, gpu, dir) // a new cache: nothing live in memory
		m, err := c.Module(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Release()
		if m.Outcome != want {
			t.Errorf("%s: outcome %v, want %v", why, m.Outcome, want)
		}
	}
	build(kcache.OutcomeBuilt, "first build")
	build(kcache.OutcomeDisk, "second cache, nothing changed (a refused kernel would be built again)")
	write("unrelated.h", "#define UNRELATED 2\n")
	write("new.h", "#define NEW 1\n")
	build(kcache.OutcomeDisk, "a header the kernel does not include edited, another added")
	write("mine.h", "#define MINE 2\n")
	build(kcache.OutcomeBuilt, "the kernel's own header edited")
}

// TestCCCLScanNVRTC13 scans every CCCL kernel of deps/testdata/cccl with
// the whole NVRTC 13 model against a toolkit's include directory
// (KCACHE_CUDA_INCLUDE; a copy serves, no GPU needed): none may be refused
// or widened, so the names NVRTC defines on its own are never what a CCCL
// computed include expands.
func TestCCCLScanNVRTC13(t *testing.T) {
	inc := os.Getenv("KCACHE_CUDA_INCLUDE")
	if inc == "" {
		t.Skip("KCACHE_CUDA_INCLUDE is not set")
	}
	files, err := filepath.Glob(filepath.Join(ccclTestdata(t), "*.cu"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no kernels: %v", err)
	}
	s := deps.NewScanner(nil)
	for _, f := range files {
		code, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := Source{Code: code, Path: filepath.Base(f)}
		in := deps.Input{Source: code, Path: src.Path, WorkDir: t.TempDir(), Args: []string{"-I" + inc + "/cccl", "-I" + inc, "-std=c++17", "-arch=sm_90"}}
		nvrtc13(&in, src)
		_, tr, err := s.Scan(context.Background(), in)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, d := range tr {
			if d.Rule == deps.RuleManifest {
				t.Errorf("%s: widened to %s", f, d.Path)
				break
			}
		}
	}
}

// TestNVRTC13CompilerHeaders: a source with headers in memory names them
// after NVRTC's built-in header, in a list of its own; one without shares
// the built-in list, which no call changes.
func TestNVRTC13CompilerHeaders(t *testing.T) {
	var plain, with, again deps.Input
	nvrtc13(&plain, Source{Code: []byte("x")})
	nvrtc13(&with, Source{Code: []byte("x"), Headers: []Header{{Name: "a.h"}, {Name: "b.h"}}})
	nvrtc13(&again, Source{Code: []byte("y")})
	if !slices.Equal(with.CompilerHeaders, []string{nvrtcBuiltinHeader, "a.h", "b.h"}) {
		t.Fatalf("with headers in memory: %q", with.CompilerHeaders)
	}
	for _, in := range []deps.Input{plain, again} {
		if !slices.Equal(in.CompilerHeaders, []string{nvrtcBuiltinHeader}) {
			t.Fatalf("without: %q", in.CompilerHeaders)
		}
	}
	if &with.CompilerHeaders[0] == &plain.CompilerHeaders[0] || len(nvrtcBuiltinHeaders) != 1 {
		t.Fatalf("the shared list was extended: %q", nvrtcBuiltinHeaders)
	}
}

// TestLexesCPlusPlus14: NVRTC 13's scan lexes as C++14 (digit separators,
// raw strings) only where every dialect option names C++14 or later, or
// none is given (its default is C++17); an older dialect or an option
// spelled apart from its value lexes as any C++ does.
func TestLexesCPlusPlus14(t *testing.T) {
	for _, c := range []struct {
		options []string
		want    bool
	}{
		{nil, true},
		{[]string{"-arch=sm_90"}, true},
		{[]string{"-std=c++17"}, true},
		{[]string{"--std=c++20", "-std=c++14"}, true},
		{[]string{"-std=c++11"}, false},
		{[]string{"--std=c++03"}, false},
		{[]string{"-std=c++17", "-std=c++11"}, false},
		{[]string{"-std", "c++17"}, false},
		{[]string{"--std=gnu++17"}, false},
		{[]string{"-stdlib=x", "-standard=c++11"}, true},
	} {
		if got := lexesCPlusPlus14(c.options); got != c.want {
			t.Errorf("lexesCPlusPlus14(%q) = %v, want %v", c.options, got, c.want)
		}
	}
	var in deps.Input
	in.Args = []string{"-std=c++11"}
	nvrtc13(&in, Source{})
	if in.LexesCPlusPlus {
		t.Error("nvrtc13 under -std=c++11 lexes as C++14")
	}
	in = deps.Input{}
	nvrtc13(&in, Source{})
	if !in.LexesCPlusPlus {
		t.Error("nvrtc13 with no dialect option does not lex as NVRTC 13's default, C++17")
	}
}
