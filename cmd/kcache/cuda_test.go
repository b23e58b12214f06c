package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/internal/demo/cudasuite"
)

func TestCheckBackend(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"opencl", true}, {"cuda", true}, {"CUDA", false}, {"metal", false}, {"", false}} {
		if err := checkBackend(tc.in); (err == nil) != tc.ok {
			t.Errorf("checkBackend(%q) = %v", tc.in, err)
		}
	}
}

// TestCUDABuild builds a CUDA file twice through `kcache build --backend
// cuda`: compiled, then from disk; an edit of its header compiles again.
// Where there is no GPU (CI), the command must fail naming what is
// missing.
func TestCUDABuild(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KCACHE_DIR", filepath.Join(dir, "cache"))
	src := filepath.Join(dir, "k.cu")
	os.WriteFile(filepath.Join(dir, "k.cuh"), []byte("#define F 2\n"), 0o644)
	os.WriteFile(src, []byte("#include \"k.cuh\"\nextern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= F; }\n"), 0o644)
	build := func() buildReport {
		t.Helper()
		var out, errOut bytes.Buffer
		err := runCUDABuild(context.Background(), &streams{out: &out, errOut: &errOut}, []string{src}, buildInput{options: "-std=c++17"}, 0, true)
		if err != nil {
			if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) || errors.Is(err, cuda.ErrNoNVRTC) {
				if !strings.Contains(err.Error(), "libcuda.so.1") && !strings.Contains(err.Error(), "GPU") && !strings.Contains(err.Error(), "NVRTC") {
					t.Fatalf("error %q names nothing missing", err)
				}
				t.Skipf("no GPU: %v", err)
			}
			t.Fatal(err)
		}
		var r buildReport
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, out.Bytes())
		}
		return r
	}
	first := build()
	if first.Outcome != "built" || first.Error != "" || !first.Stored {
		t.Fatalf("first build: %+v", first)
	}
	if second := build(); second.Outcome != "disk" || second.Digest != first.Digest {
		t.Errorf("second build: %+v, want disk with digest %s", second, first.Digest)
	}
	os.WriteFile(filepath.Join(dir, "k.cuh"), []byte("#define F 3\n"), 0o644)
	if third := build(); third.Outcome != "built" || third.Digest == first.Digest {
		t.Errorf("after a header edit: %+v, want a new build", third)
	}
}

// TestCUDADemoPhaseModuleTime runs one case of the CUDA demo's phases as
// the demo does, in new processes: the cache's cold phase (which writes
// the images), then its warm phase and the floor. Each result splits its
// time at the module loaded: module_ms is positive and within ms. It
// skips where there is no GPU.
func TestCUDADemoPhaseModuleTime(t *testing.T) {
	if _, err := cuda.GetDevice(0); err != nil {
		t.Skipf("no GPU: %v", err)
	}
	dir := t.TempDir()
	include, images := filepath.Join(dir, "include"), filepath.Join(dir, "images")
	os.MkdirAll(include, 0o755)
	for _, c := range cudasuite.All() {
		if err := c.WriteHeaders(include); err != nil {
			t.Fatal(err)
		}
	}
	phase := func(mode string, withImages bool, wantOutcome string) {
		t.Helper()
		args := []string{"cuda-demo-phase", "--mode", mode, "--include", include, "--case", "jacobi-2d"}
		if withImages {
			args = append(args, "--images", images)
		}
		cmd := kcacheCmd(t, dir, args...)
		cmd.Env = append(cmd.Env, "KCACHE_PERSISTENT=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s phase: %v\n%s", mode, err, out)
		}
		var r struct {
			Case, Outcome, Error string
			MS                   float64 `json:"ms"`
			ModuleMS             float64 `json:"module_ms"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s phase: %v: %q", mode, err, out)
		}
		if r.Error != "" || r.Outcome != wantOutcome || r.ModuleMS <= 0 || r.ModuleMS > r.MS {
			t.Errorf("%s phase: %+v, want outcome %s and 0 < module_ms <= ms", mode, r, wantOutcome)
		}
	}
	phase("cache", true, "built")
	phase("cache", false, "disk")
	phase("floor", true, "floor")
}
