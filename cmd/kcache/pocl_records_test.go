package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// privateBuildCmd is kcacheCmd with no PoCL variable set, as a user runs
// the command: it gives PoCL a new directory of its own, under a runtime
// directory of the test's, and logs at debug level.
func privateBuildCmd(t *testing.T, dir string, args ...string) *exec.Cmd {
	cmd := kcacheCmd(t, dir, args...)
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "POCL_") || strings.HasPrefix(kv, "KCACHE_DEBUG=")
	})
	home := t.TempDir()
	cmd.Env = append(cmd.Env, "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_RUNTIME_DIR="+t.TempDir(), "KCACHE_DEBUG=1")
	return cmd
}

// TestBuildRecordsWithPrivatePoCLDir: each kcache process gives PoCL a
// directory of its own, which every scan names; the dependency record of
// one process's scan still serves the next (whose key then reads no
// header), and an edit of the header is still seen.
func TestBuildRecordsWithPrivatePoCLDir(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "twice.cl")
	header := filepath.Join(dir, "factor.h")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		os.Chtimes(path, old, old)
	}
	write(file, "#include \"factor.h\"\n"+kernelSource)
	write(header, "#define FACTOR 2\n")
	time.Sleep(50 * time.Millisecond) // the files' ctimes settle, as after any edit
	build := func() (buildReport, string) {
		t.Helper()
		r := runCmd(t, privateBuildCmd(t, dir, "build", "--json", file))
		var rep buildReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil {
			t.Fatalf("build: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		return rep, r.stderr
	}
	cold, _ := build()
	if cold.Outcome != "built" {
		t.Fatalf("first process: %+v, want built", cold)
	}
	warm, log := build()
	if warm.Outcome != "disk" || warm.Digest != cold.Digest {
		t.Errorf("second process: %+v, want a disk hit of %s", warm, cold.Digest)
	}
	if !strings.Contains(log, "dependency record holds") {
		t.Errorf("the second process's key did not come from a record:\n%s", log)
	}
	write(header, "#define FACTOR 3\n")
	time.Sleep(50 * time.Millisecond)
	edited, log := build()
	if edited.Outcome != "built" || edited.Digest == cold.Digest {
		t.Errorf("after the header's edit: %+v, want a new build", edited)
	}
	if !strings.Contains(log, "dependency record stale") {
		t.Errorf("the edit was not found by the record's check:\n%s", log)
	}
}
