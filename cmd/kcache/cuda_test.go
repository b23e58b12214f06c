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
