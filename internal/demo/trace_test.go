package demo

import (
	"os"
	"path/filepath"
	"runtime/trace"
	"testing"
)

// TestPhaseTrace checks that a phase's trace lands in a file of its own
// in the directory named, holding a trace, and that a directory that does
// not exist fails the phase instead of losing the trace.
func TestPhaseTrace(t *testing.T) {
	dir := t.TempDir()
	stop, err := startPhaseTrace(dir, cudaModeFloor)
	if err != nil {
		t.Fatal(err)
	}
	if !trace.IsEnabled() {
		t.Error("tracing is not on after startPhaseTrace")
	}
	stop()
	if trace.IsEnabled() {
		t.Error("tracing is still on after stop")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "floor-*.trace"))
	if len(files) != 1 {
		t.Fatalf("trace files %v, want one", files)
	}
	if b, err := os.ReadFile(files[0]); err != nil || len(b) == 0 {
		t.Fatalf("trace file: %d bytes, %v", len(b), err)
	}
	if _, err := startPhaseTrace(filepath.Join(dir, "absent"), cudaModeFloor); err == nil {
		t.Error("a trace into a directory that does not exist started")
	}
}
