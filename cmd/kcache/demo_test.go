package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDemoPrefilledOneCase runs the whole path in real processes: the case
// through kcache (complete binary), kcache build and kcache build
// --specialize into caches of their own, then the suite from each: from
// the kcache build cache the first process rebuilds (built) and the second
// loads the entry it completed (disk); from the specialized cache the
// first process loads (disk). The command fails on any other outcome.
func TestDemoPrefilledOneCase(t *testing.T) {
	requireOpenCL(t)
	cmd := kcacheCmd(t, t.TempDir(), "demo-prefilled", "--case", "axpy-vec4", "--repeat", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("demo-prefilled: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	for _, want := range []string{"axpy-vec4", "ok", "--specialize "} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("FAIL")) {
		t.Errorf("a phase failed:\n%s", out)
	}
	fmt.Fprintln(os.Stderr)
}

// TestDemoUnknownCase runs `kcache demo` with a case the suite lacks: it
// fails before running anything, naming the case, and leaves no working
// directory behind.
func TestDemoUnknownCase(t *testing.T) {
	requireOpenCL(t)
	tmp := t.TempDir()
	cmd := kcacheCmd(t, t.TempDir(), "demo", "--case", "sgemm-naive", "--case", "no-such-case")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `no case named "no-such-case"`) {
		t.Errorf("demo with an unknown case: %v\n%s", err, out)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left %v in TMPDIR", left)
	}
}
