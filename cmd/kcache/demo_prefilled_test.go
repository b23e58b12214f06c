package main

import (
	"bytes"
	"fmt"
	"os"
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
