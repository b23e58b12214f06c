package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// TestWarmInterrupted interrupts a warm run, as ^C does, once its first
// file is built: it stops early with status 130, says so with a summary
// of what it did, keeps its counters, and leaves no scratch directory.
func TestWarmInterrupted(t *testing.T) {
	requireOpenCL(t)
	kernels := writeKernels(t, 8)
	dir, runtime := t.TempDir(), t.TempDir()
	cmd := kcacheCmd(t, dir, "warm", "--json", "--jobs", "1", filepath.Join(kernels, "sub"))
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "POCL_CACHE_DIR=") })
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+runtime)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	built, reported := 0, 0
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if reported++; reported == 1 {
			cmd.Process.Signal(os.Interrupt)
		}
		// A compile under way at the interrupt may fail: LLVM's signal
		// handler removes its temporary files.
		var r buildReport
		json.Unmarshal(sc.Bytes(), &r)
		switch r.Outcome {
		case "built":
			built++
		case "interrupted":
		default:
			t.Errorf("outcome %q: %s", r.Outcome, sc.Text())
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130\n%s", err, stderr.String())
	}
	want := fmt.Sprintf("warmed %d of 8 files (interrupted): %d built", reported, built)
	if reported >= 8 || !strings.Contains(stderr.String(), "kcache: interrupted") || !strings.Contains(stderr.String(), want) {
		t.Errorf("%d built; stderr %q, want %q\n%s", built, stderr.String(), want, strings.Join(lines, "\n"))
	}
	var stats statsJSON
	runJSONOut(t, dir, &stats, "stats", "--json")
	if stats.Counters.Builds != int64(built) || stats.Entries != built {
		t.Errorf("after the interrupt: %d builds counted, %d entries; want %d", stats.Counters.Builds, stats.Entries, built)
	}
	if left, _ := os.ReadDir(runtime); len(left) > 0 {
		t.Errorf("scratch left behind: %v", left)
	}
}
