package main

import (
	"os"
	"path/filepath"
	"strings"
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

// TestBuildFindsHeadersBesideFile: a file is built as a compiler given the
// file would build it, its own directory searched for its includes,
// though PoCL compiles a temporary copy elsewhere; and an error names the
// user's file, not that copy.
func TestBuildFindsHeadersBesideFile(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "suite"), 0o755)
	os.WriteFile(filepath.Join(dir, "suite", "common.h"), []byte("#define F 3\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "suite", "a.cl"), []byte("#include \"common.h\"\n__kernel void k(__global int* a) { a[0] = F; }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "suite", "bad.cl"), []byte("#include \"nothere.h\"\n__kernel void k(__global int* a) { a[0] = 1; }\n"), 0o644)
	cmd := kcacheCmd(t, dir, "build", "--json", "suite/a.cl", "suite/bad.cl")
	cmd.Dir = dir
	reports, _ := runJSON(t, cmd)
	if len(reports) != 2 || reports[0].Outcome != "built" {
		t.Fatalf("reports %+v, want suite/a.cl built", reports)
	}
	if e := reports[1].Error; !strings.Contains(e, "suite/bad.cl:1:10") || strings.Contains(e, "tempfile_") {
		t.Errorf("the error names another file than the user's: %q", e)
	}
}
