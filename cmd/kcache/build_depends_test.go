package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBuildDependsRebuilds checks kcache build --depends: a declared file
// enters the key, so editing it makes the next process build again rather
// than hit the disk tier.
func TestBuildDependsRebuilds(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	file := writeKernel(t, dir)
	data := filepath.Join(dir, "factor.txt")
	edit := func(content string) {
		if err := os.WriteFile(data, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour) // past the window where a stat cannot be trusted
		os.Chtimes(data, old, old)
	}
	build := func() buildReport {
		t.Helper()
		rs, code := runJSON(t, kcacheCmd(t, dir, "build", "--json", "--options", "-DFACTOR=2", "--depends", data, "--depends", data+".missing", file))
		if code != 0 || len(rs) != 1 {
			t.Fatalf("exit %d, %d reports", code, len(rs))
		}
		return rs[0]
	}
	edit("2")
	if r := build(); r.Outcome != "built" {
		t.Fatalf("first build: %+v", r)
	}
	if r := build(); r.Outcome != "disk" {
		t.Fatalf("unchanged dependency: %+v, want a disk hit", r)
	}
	edit("3")
	if r := build(); r.Outcome != "built" {
		t.Fatalf("edited dependency: %+v, want a new build", r)
	}
	edit("3")
	if err := os.WriteFile(data+".missing", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := build(); r.Outcome != "built" {
		t.Fatalf("a declared file created: %+v, want a new build", r)
	}
}
