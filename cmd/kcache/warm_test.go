package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeKernels writes n small kernels under dir/sub and one that does not
// compile in dir, and returns dir.
func writeKernels(t *testing.T, n int) string {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	for i := range n {
		src := fmt.Sprintf("__kernel void k%d(__global int* v) { v[get_global_id(0)] *= %d; }\n", i, i+2)
		os.WriteFile(filepath.Join(dir, "sub", fmt.Sprintf("k%d.cl", i)), []byte(src), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "broken.cl"), []byte("__kernel void b() { nope(); }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "README"), []byte("not a kernel"), 0o644)
	return dir
}

func TestWarm(t *testing.T) {
	requireOpenCL(t)
	kernels := writeKernels(t, 4)
	dir := t.TempDir()
	outcomes := func(r result) map[string]int {
		t.Helper()
		got := map[string]int{}
		sc := bufio.NewScanner(strings.NewReader(r.stdout))
		for sc.Scan() {
			var b buildReport
			if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
				t.Fatalf("not JSON: %q", sc.Text())
			}
			if b.Error != "" {
				got["error"]++
				continue
			}
			got[b.Outcome]++
		}
		return got
	}
	r := run(t, dir, "warm", "--json", "--jobs", "3", kernels)
	if got := outcomes(r); r.code != 1 || got["built"] != 4 || got["error"] != 1 || len(got) != 2 {
		t.Fatalf("cold warm: exit %d, outcomes %v\n%s", r.code, got, r.stderr)
	}
	if strings.Contains(r.stderr, "warming") || !strings.Contains(r.stderr, "warmed 5 files: 4 built, 1 failed") {
		t.Errorf("stderr %q: want a summary and no progress bar", r.stderr)
	}
	r = run(t, dir, "warm", "--json", filepath.Join(kernels, "sub"))
	if got := outcomes(r); r.code != 0 || got["disk"] != 4 || len(got) != 1 {
		t.Errorf("second warm: exit %d, outcomes %v", r.code, got)
	}
	var ls []entryJSON
	runJSONOut(t, dir, &ls, "ls", "--json")
	if len(ls) != 4 {
		t.Errorf("%d entries after warm, want 4", len(ls))
	}
	for _, bad := range [][]string{{"warm"}, {"warm", "--jobs", "0", kernels}} {
		if r := run(t, dir, bad...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, r.code)
		}
	}
	if r := run(t, dir, "warm", filepath.Join(kernels, "none")); r.code != 1 {
		t.Errorf("missing directory: exit %d, want 1", r.code)
	}
}

// TestWarmProgress runs warm in this process with standard error taken for
// a terminal: the progress bar draws there, never on standard output.
func TestWarmProgress(t *testing.T) {
	requireOpenCL(t)
	kernels := writeKernels(t, 2)
	t.Setenv("KCACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	t.Setenv("POCL_KERNEL_CACHE", "0")
	t.Setenv("POCL_CACHE_DIR", t.TempDir())
	var out, errOut bytes.Buffer
	ios := &streams{out: &out, errOut: &errOut, errTTY: true}
	err := runWarm(context.Background(), ios, []string{filepath.Join(kernels, "sub")}, warmOptions{jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "warming") || !strings.Contains(errOut.String(), "/2)") {
		t.Errorf("no progress bar on a terminal: %q", errOut.String())
	}
	if out.Len() != 0 {
		t.Errorf("progress on standard output: %q", out.String())
	}
}
