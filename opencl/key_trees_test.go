package opencl

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// Header trees nobody here wrote, through real PoCL: a kernel includes a
// real tree's header (a copy, which the test edits), and a header two
// levels down is edited between two builds; the build after the edit must
// compute with the edit, in the same process, in a new cache of it, and
// in a new process.

// realTree is a copied header tree, a kernel that includes from it, and
// the header the test edits.
type realTree struct {
	name, dir, pkg string
	include        string // the kernel's include lines, over the copy
	options        string // %s: the copy's include root
	edit           string // the header edited, under the copy
}

var realTrees = []realTree{
	{"pyopencl philox", "/usr/lib/python3/dist-packages/pyopencl/cl", "python3-pyopencl",
		"#include <pyopencl-random123/philox.cl>", "-I cl", "cl/pyopencl-random123/array.h"},
	{"Random123 threefry", "/usr/include/Random123", "librandom123-dev",
		"#include <Random123/threefry.h>", "-I .", "Random123/features/openclfeatures.h"},
}

// copyRealTree copies tr's directory into dst, under its own name (which
// the kernel's options and includes name).
func copyRealTree(t *testing.T, tr realTree, dst string) {
	t.Helper()
	if _, err := os.Stat(tr.dir); err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("KCACHE_REQUIRE_REAL=1 but %s is missing (apt-get install %s)", tr.dir, tr.pkg)
		}
		t.Skipf("%s is missing (apt-get install %s)", tr.dir, tr.pkg)
	}
	root := filepath.Join(dst, filepath.Base(tr.dir))
	err := filepath.WalkDir(tr.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tr.dir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(root, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// scaleAfter appends a definition of SCALE to the tree's edited header,
// which the kernel uses where its includes define it.
func scaleAfter(t *testing.T, wd string, tr realTree, scale string) {
	t.Helper()
	path := filepath.Join(wd, tr.edit)
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(old)+"\n#undef SCALE\n#define SCALE "+scale+"\n", time.Minute)
}

// treeSource is the saxpy kernel over tr's includes: SCALE is 1 unless a
// header defines it.
func treeSource(tr realTree) Source {
	return Source{Code: saxpyWith(tr.include + "\n#ifndef SCALE\n#define SCALE 1.0f\n#endif"), Options: tr.options}
}

// TestRealTreeHeaderEdit: the same process, and a new cache over the same
// disk tier, after a header deep in a real tree was edited.
func TestRealTreeHeaderEdit(t *testing.T) {
	for _, tr := range realTrees {
		t.Run(tr.name, func(t *testing.T) {
			wd := t.TempDir()
			t.Chdir(wd)
			copyRealTree(t, tr, wd)
			cache := t.TempDir()
			first := newTierSet(t, cache)
			src := treeSource(tr)
			p := first.program(t, src)
			if p.Outcome != kcache.OutcomeBuilt {
				t.Fatalf("first build: outcome %v, want built", p.Outcome)
			}
			first.saxpy(t, p, 1)
			scaleAfter(t, wd, tr, "2.0f")
			again := first.program(t, src)
			if again.Outcome != kcache.OutcomeBuilt {
				t.Fatalf("the same process after the edit: outcome %v, want built", again.Outcome)
			}
			first.saxpy(t, again, 2)
			scaleAfter(t, wd, tr, "3.0f")
			second := newTierSet(t, cache)
			q := second.program(t, src)
			if q.Outcome != kcache.OutcomeBuilt {
				t.Fatalf("a new cache after the edit: outcome %v, want built", q.Outcome)
			}
			second.saxpy(t, q, 3)
			// And back: the first edit's binary is the one its text gives.
			third := newTierSet(t, cache)
			scaleAfter(t, wd, tr, "2.0f")
			third.saxpy(t, third.program(t, src), 2)
		})
	}
}

// TestRealTreeHeaderEditNewProcess: the same through processes of their
// own (the test binary again), which read the first one's disk tier and
// dependency records: each child builds and checks the SCALE it is told.
func TestRealTreeHeaderEditNewProcess(t *testing.T) {
	if os.Getenv(childEnv) == t.Name() {
		tr := realTrees[0]
		for _, r := range realTrees {
			if r.name == os.Getenv("KCACHE_TEST_TREE") {
				tr = r
			}
		}
		t.Chdir(os.Getenv("KCACHE_TEST_WD"))
		ts := newTierSet(t, os.Getenv("KCACHE_TEST_DIR"))
		var want float32
		switch os.Getenv("KCACHE_TEST_SCALE") {
		case "1":
			want = 1
		case "4":
			want = 4
		}
		p := ts.program(t, treeSource(tr))
		if w := os.Getenv("KCACHE_TEST_OUTCOME"); w != "" && p.Outcome.String() != w {
			t.Errorf("outcome %v, want %s", p.Outcome, w)
		}
		ts.saxpy(t, p, want)
		return
	}
	for _, tr := range realTrees {
		t.Run(tr.name, func(t *testing.T) {
			wd := t.TempDir()
			copyRealTree(t, tr, wd)
			dir := t.TempDir()
			env := []string{"KCACHE_TEST_TREE=" + tr.name, "KCACHE_TEST_WD=" + wd, "KCACHE_TEST_DIR=" + dir}
			runChild(t, "TestRealTreeHeaderEditNewProcess", append(env, "KCACHE_TEST_SCALE=1", "KCACHE_TEST_OUTCOME="+kcache.OutcomeBuilt.String())...)
			runChild(t, "TestRealTreeHeaderEditNewProcess", append(env, "KCACHE_TEST_SCALE=1", "KCACHE_TEST_OUTCOME="+kcache.OutcomeDisk.String())...)
			// The first process left dependency records, which a new
			// process checks by stat instead of scanning the tree: the
			// edit below must be seen through them.
			if len(dependencyRecordFiles(dir)) == 0 {
				t.Fatal("no dependency record: the edit would not be checked through one")
			}
			scaleAfter(t, wd, tr, "4.0f")
			runChild(t, "TestRealTreeHeaderEditNewProcess", append(env, "KCACHE_TEST_SCALE=4", "KCACHE_TEST_OUTCOME="+kcache.OutcomeBuilt.String())...)
		})
	}
}

// runChild runs the top-level test name in a child process of the test
// binary, with env added, and fails with its output if it fails.
func runChild(t *testing.T, name string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+name+"$", "-test.v")
	cmd.Env = append(append(os.Environ(), childEnv+"="+name), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s in a child process (%v): %v\n%s", name, env, err, out)
	}
}
