package cuda

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	// Back-date it past the stat cache's "too new to trust" window, as an
	// edit of a second ago would be.
	old := time.Now().Add(-time.Minute)
	os.Chtimes(path, old, old)
}

// fakeCache is a Cache with a fixed identity and no GPU: what Key needs.
func fakeCache(t testing.TB, env []string) *Cache {
	t.Helper()
	bins := kcache.New(kcache.DefaultConfig(func(string) string { return "" }), nil)
	return &Cache{bins: bins, scanner: deps.NewScanner(nil), keys: newKeyMemo(), env: compilerEnv.Select(env), id: identity{
		dev:  kcache.Device{Platform: "CUDA", Name: "NVIDIA H100 80GB HBM3", Version: "sm_90", Driver: "cuda 13000"},
		comp: kcache.Compiler{Name: "nvrtc", Version: "13.0", Library: "/usr/local/cuda/lib64/libnvrtc.so.13", LibrarySize: 1, LibraryTime: 2},
		arch: "sm_90", cc: 90,
	}}
}

func mustKey(t *testing.T, c *Cache, src Source) kcache.Digest {
	t.Helper()
	k, err := c.Key(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return k.Digest()
}

// TestKeyChanges checks that everything that changes NVRTC's output
// changes the key, and that what does not, does not.
func TestKeyChanges(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src", "k.cu"), `#include "local.h"`+"\n#include <lib.h>\n__global__ void k() {}\n")
	writeFile(t, filepath.Join(dir, "src", "local.h"), "#define A 1\n")
	writeFile(t, filepath.Join(dir, "inc", "lib.h"), "#include \"nested.h\"\n")
	writeFile(t, filepath.Join(dir, "inc", "nested.h"), "#define B 2\n")
	writeFile(t, filepath.Join(dir, "inc", "pre.h"), "#define C 3\n")
	code, _ := os.ReadFile(filepath.Join(dir, "src", "k.cu"))
	base := Source{Code: code, Path: filepath.Join(dir, "src", "k.cu"), Options: []string{"--include-path", filepath.Join(dir, "inc"), "--pre-include=pre.h"},
		Headers: []Header{{Name: "mem.h", Content: []byte("int m;")}}, NameExpressions: []string{"k"}}
	c := fakeCache(t, []string{"CUDA_FORCE_PTX_JIT=0", "HOME=/root"})
	d0 := mustKey(t, c, base)
	if mustKey(t, c, base) != d0 {
		t.Fatal("the key of one source is not stable")
	}
	changed := func(name string, mutate func(*Source, *Cache)) {
		t.Helper()
		src := base
		src.Options = slices.Clone(base.Options)
		src.Headers = slices.Clone(base.Headers)
		src.NameExpressions = slices.Clone(base.NameExpressions)
		cc := fakeCache(t, []string{"CUDA_FORCE_PTX_JIT=0", "HOME=/root"})
		mutate(&src, cc)
		if mustKey(t, cc, src) == d0 {
			t.Errorf("%s: key unchanged", name)
		}
	}
	changed("source", func(s *Source, _ *Cache) { s.Code = append(slices.Clone(s.Code), ' ') })
	changed("option", func(s *Source, _ *Cache) { s.Options = append(s.Options, "-DX=1") })
	changed("arch", func(s *Source, _ *Cache) { s.Options = append(s.Options, "-arch=compute_90") })
	changed("option position", func(s *Source, _ *Cache) { s.Options = append([]string{"-DX=1"}, s.Options...) })
	changed("name expression", func(s *Source, _ *Cache) { s.NameExpressions = append(s.NameExpressions, "k2") })
	changed("memory header", func(s *Source, _ *Cache) { s.Headers[0].Content = []byte("int n;") })
	changed("program name", func(s *Source, _ *Cache) { s.Path = filepath.Join(dir, "src", "other.cu") })
	changed("device", func(_ *Source, c *Cache) { c.id.dev.Name = "NVIDIA H200" })
	changed("driver", func(_ *Source, c *Cache) { c.id.dev.Driver = "cuda 13010" })
	changed("nvrtc", func(_ *Source, c *Cache) { c.id.comp.LibraryTime = 3 })
	changed("env", func(_ *Source, c *Cache) { c.env = compilerEnv.Select([]string{"CUDA_FORCE_PTX_JIT=1"}) })
	changed("nvrtc env", func(_ *Source, c *Cache) { c.env = append(c.env, kcache.EnvVar{Name: "NVRTC_X", Value: "1"}) })
	changed("jit options", func(_ *Source, c *Cache) { c.jit = map[JITOption]int{JITOptimizationLevel: 1} })
	writeFile(t, filepath.Join(dir, "table.bin"), "1 2 3")
	changed("declared dependency", func(s *Source, _ *Cache) { s.Depends = []string{filepath.Join(dir, "table.bin")} })

	for _, h := range []string{filepath.Join("src", "local.h"), filepath.Join("inc", "nested.h"), filepath.Join("inc", "pre.h")} {
		p := filepath.Join(dir, h)
		old, _ := os.ReadFile(p)
		writeFile(t, p, string(old)+"// edited\n")
		if mustKey(t, fakeCache(t, []string{"CUDA_FORCE_PTX_JIT=0"}), base) == d0 {
			t.Errorf("editing %s left the key unchanged", h)
		}
		writeFile(t, p, string(old))
	}
	same := fakeCache(t, []string{"CUDA_FORCE_PTX_JIT=0", "CUDA_VISIBLE_DEVICES=3", "CUDA_CACHE_PATH=/x", "HOME=/elsewhere"})
	if mustKey(t, same, base) != d0 {
		t.Error("variables that do not change code generation changed the key")
	}
}

func TestCompilerEnv(t *testing.T) {
	got := compilerEnv.Select([]string{"CUDA_FORCE_PTX_JIT=1", "NVRTC_FOO=x", "CUDA_VISIBLE_DEVICES=1", "CUDA_CACHE_PATH=/c", "PATH=/bin", "CUDA_UNKNOWN_NEW=2"})
	var names []string
	for _, e := range got {
		names = append(names, e.Name)
	}
	want := []string{"CUDA_FORCE_PTX_JIT", "NVRTC_FOO", "CUDA_UNKNOWN_NEW"}
	if !slices.Equal(names, want) {
		t.Errorf("compilerEnv kept %v, want %v (unknown CUDA_ variables widen the key)", names, want)
	}
}

func TestPlan(t *testing.T) {
	c := fakeCache(t, nil)
	for _, tc := range []struct {
		opts   []string
		ptx    bool
		want   string
		format string
	}{
		{nil, false, "-arch=sm_90", FormatCUBIN},
		{[]string{"-arch=compute_90"}, false, "-arch=compute_90", FormatPTX},
		{[]string{"-arch", "sm_90a"}, false, "sm_90a", FormatCUBIN},
		{[]string{"--gpu-architecture=compute_80"}, false, "--gpu-architecture=compute_80", FormatPTX},
		{nil, true, "-arch=compute_90", FormatPTX},
	} {
		c.id.ptx = tc.ptx
		p, err := c.plan(Source{Options: tc.opts})
		if tc.ptx && err != nil {
			continue // SupportedArchs needs NVRTC; ptxArchFor is tested alone
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.format != tc.format || !slices.Contains(p.options, tc.want) {
			t.Errorf("plan(%v, ptx=%v) = %+v, want %s with %s", tc.opts, tc.ptx, p, tc.format, tc.want)
		}
	}
}

func TestPTXFallback(t *testing.T) {
	archs := []int{75, 80, 86, 89, 90}
	if ptx, _ := ptxFallback(90, archs, 13, 0); ptx {
		t.Error("sm_90 with an NVRTC that knows it falls back to PTX")
	}
	ptx, reason := ptxFallback(120, archs, 12, 0)
	if !ptx || !strings.Contains(reason, "sm_120") || !strings.Contains(reason, "PTX") {
		t.Errorf("sm_120 with NVRTC 12.0: ptx=%v reason=%q", ptx, reason)
	}
	if got := ptxArchFor(120, archs); got != "compute_90" {
		t.Errorf("ptxArchFor(120) = %s, want compute_90", got)
	}
	if got := ptxArchFor(87, archs); got != "compute_86" {
		t.Errorf("ptxArchFor(87) = %s, want compute_86", got)
	}
}

func TestEncodeOptions(t *testing.T) {
	if got := encodeOptions("k.cu", []string{"-DA=1 2", "-arch=sm_90"}); got != `program="k.cu" "-DA=1 2" "-arch=sm_90"` {
		t.Errorf("encodeOptions = %s", got)
	}
}

// TestUsePCHKeyed: NVRTC reads the precompiled header --use-pch names,
// which holds what its headers declared and the macros they defined when
// it was made: a PCH made again from other headers changes the key, in
// each spelling of the option.
func TestUsePCHKeyed(t *testing.T) {
	dir := t.TempDir()
	pch := filepath.Join(dir, "a.pch")
	for _, opts := range [][]string{{"--use-pch=" + pch}, {"-use-pch=" + pch}, {"--use-pch", pch}, {"-use-pch", pch}} {
		writeFile(t, pch, "a PCH made from one header")
		src := Source{Code: []byte("#include <a.h>\n__global__ void k() {}\n"), Options: append([]string{"-std=c++17"}, opts...)}
		before := mustKey(t, fakeCache(t, nil), src)
		writeFile(t, pch, "a PCH made from another")
		if mustKey(t, fakeCache(t, nil), src) == before {
			t.Errorf("%q: a new PCH left the key unchanged", opts)
		}
	}
	if got := pchFiles([]string{"--pch", "--pch-dir=/tmp/p", "--create-pch=x.pch"}); len(got) != 0 {
		t.Errorf("pchFiles of options that read no given PCH: %q", got)
	}
}

// TestDayTurnedDuringCompile: a source that expands __DATE__ is keyed by
// the day; an image compiled when the day has turned since its key was
// computed is not stored under that key (inputsUnchanged, asked before a
// commit), since NVRTC wrote the new day into it.
func TestDayTurnedDuringCompile(t *testing.T) {
	c := fakeCache(t, nil)
	src := Source{Code: []byte("__device__ const char *day = __DATE__;\n__global__ void k() {}\n")}
	p, err := c.plan(src)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.key(context.Background(), src, p)
	if err != nil {
		t.Fatal(err)
	}
	headers := key.Image.Headers
	if !c.inputsUnchanged(src, p, headers) {
		t.Fatal("a key computed today does not hold today")
	}
	i := slices.IndexFunc(headers, func(h kcache.Header) bool { return h.Name == deps.DateHeader })
	if i < 0 {
		t.Fatal("the key of a source that expands __DATE__ holds no day")
	}
	yesterday := slices.Clone(headers)
	yesterday[i].Digest = sha256.Sum256([]byte("Jan  1 2000"))
	if c.inputsUnchanged(src, p, yesterday) {
		t.Error("a key of another day holds today")
	}
}
