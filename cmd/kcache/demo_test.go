package main

import (
	"os"
	"strings"
	"testing"
)

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
