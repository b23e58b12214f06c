package deps

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kcache/kcache"
)

// privateTree is a PoCL-like input over a tree: the source includes
// "common.h" from an -I directory, and PoCL's scratch directory (MainDir,
// private to each process) is searched first. privateIn returns the input
// a process whose scratch directory is dir makes.
func privateTree(t testing.TB) (root string, privateIn func(dir string) Input) {
	t.Helper()
	root = tree(t, map[string]string{
		"inc/common.h": "#ifndef COMMON_H\n#define COMMON_H\n#include \"more.h\"\n#endif\n",
		"inc/more.h":   "int more;\n",
	})
	privateIn = func(dir string) Input {
		return Input{
			Source: []byte("#include \"common.h\"\n#include <more.h>\nkernel void k() {}\n"), WorkDir: root,
			Args: SplitOptions("-I inc"), SearchWorkDir: true, CompleteSearchPath: true, Trigraphs: TrigraphsOn,
			MainDir: dir, PrivateDir: dir,
		}
	}
	return root, privateIn
}

// scratch makes a new private directory, as each kcache process does.
func scratch(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(t.TempDir(), "kcache-pocl-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPrivateRecordServesAnotherProcess: the record of a scan under one
// private directory serves a scanner under another, reading no header,
// and its absent places name the new directory.
func TestPrivateRecordServesAnotherProcess(t *testing.T) {
	_, privateIn := privateTree(t)
	store := newMemRecords()
	p1, p2 := scratch(t), scratch(t)
	want, _ := scanRecorded(t, settledScanner(store), privateIn(p1))
	if store.stores.Load() != 1 {
		t.Fatalf("%d records stored, want 1", store.stores.Load())
	}
	for id, rec := range store.m {
		if strings.Contains(string(rec), p1) {
			t.Errorf("record %v names the first process's directory", id)
		}
	}
	s2 := settledScanner(store)
	c := counting(s2)
	got, trace := mustScan(t, s2, privateIn(p2))
	if !slices.Equal(got, want) {
		t.Fatalf("served %v\nwant %v", got, want)
	}
	if c.reads.Load() != 0 || c.lists.Load() != 0 {
		t.Errorf("%d reads, %d listings: not served by the record", c.reads.Load(), c.lists.Load())
	}
	_, fresh := mustScan(t, NewScanner(nil), privateIn(p2))
	if !slices.Equal(trace, fresh) {
		t.Errorf("trace from the record %v\nwant a fresh scan's %v", trace, fresh)
	}
	if !slices.ContainsFunc(trace, func(d Dependency) bool { return d.Rule == RuleAbsent && d.Path == p2+"/common.h" }) {
		t.Errorf("no absent place %s/common.h in %v", p2, trace)
	}
}

// TestPrivateRecordSeesAFileInTheNewDir: a header that appears in the new
// process's private directory, where the record's process found none,
// makes the record stale, and the key names it.
func TestPrivateRecordSeesAFileInTheNewDir(t *testing.T) {
	_, privateIn := privateTree(t)
	store := newMemRecords()
	before, _ := scanRecorded(t, settledScanner(store), privateIn(scratch(t)))
	p2 := scratch(t)
	write(t, filepath.Join(p2, "common.h"), "int shadow;\n")
	s2 := settledScanner(store)
	c := counting(s2)
	got, _ := mustScan(t, s2, privateIn(p2))
	want, _ := mustScan(t, NewScanner(nil), privateIn(p2))
	if !slices.Equal(got, want) {
		t.Fatalf("key %v\nwant %v", got, want)
	}
	if slices.Equal(got, before) || !slices.ContainsFunc(got, func(h kcache.Header) bool { return h.Name == p2+"/common.h" }) {
		t.Fatalf("key %v does not hold the new header", got)
	}
	if c.reads.Load() == 0 {
		t.Error("served by a record that no longer holds")
	}
	// Its scan found a file in its private directory: no record of it
	// could serve another process.
	if n := store.stores.Load(); n != 1 {
		t.Errorf("%d records stored, want only the first", n)
	}
}

// TestPrivateRecordNotStored: a scan that looked under its private
// directory other than for the main source's quoted includes, or whose
// input names the directory elsewhere, stores no record: re-rooting it
// could hide a place another process's scan looks at.
func TestPrivateRecordNotStored(t *testing.T) {
	root, privateIn := privateTree(t)
	cases := map[string]func(in Input, p string) Input{
		"an -I option names it": func(in Input, p string) Input {
			in.Args = append(in.Args, "-I", p+"/inc")
			return in
		},
		"an absolute include names it": func(in Input, p string) Input {
			in.Source = append(in.Source, "#include \""+p+"/x.h\"\n"...)
			return in
		},
		"a header includes a place in it": func(in Input, p string) Input {
			write(t, filepath.Join(root, "inc/abs.h"), "#include \""+p+"/y.h\"\n")
			in.Source = append(in.Source, "#include <abs.h>\n"...)
			return in
		},
		"a relative include reaches it through its parent": func(in Input, p string) Input {
			in.Args = append(in.Args, "-I", filepath.Dir(p))
			in.Source = append(in.Source, "#include <"+filepath.Base(p)+"/z.h>\n"...)
			return in
		},
		"an angled include": func(in Input, p string) Input {
			in.Args = append(SplitOptions("-I "+p), in.Args...)
			return in
		},
		"MainDir is another directory": func(in Input, p string) Input {
			in.MainDir = p + "/sub"
			return in
		},
		"a relative private directory": func(in Input, p string) Input {
			in.PrivateDir, in.MainDir = "rel", "rel"
			return in
		},
		"the working directory is in it": func(in Input, p string) Input {
			in.WorkDir = p
			in.Args = SplitOptions("-I " + root + "/inc")
			return in
		},
		"a file found in it": func(in Input, p string) Input {
			write(t, filepath.Join(p, "common.h"), "int c;\n")
			return in
		},
		"a declared file in it": func(in Input, p string) Input {
			in.Depends = []string{p + "/dep"}
			return in
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			p := scratch(t)
			store := newMemRecords()
			in := change(privateIn(p), p)
			want, _ := mustScan(t, NewScanner(nil), in)
			got, _ := scanRecorded(t, settledScanner(store), in)
			if !slices.Equal(got, want) {
				t.Errorf("key %v\nwant %v", got, want)
			}
			if n := store.stores.Load(); n != 0 {
				t.Errorf("%d records stored, want none", n)
			}
		})
	}
}

// TestPrivateRecordKeepsOtherPlaces: a record re-roots only the places
// the main source's includes probed in the private directory; a place
// in the previous process's directory that a header names, and the
// search directories, are checked where they are.
func TestPrivateRecordKeepsOtherPlaces(t *testing.T) {
	_, privateIn := privateTree(t)
	store := newMemRecords()
	p1 := scratch(t)
	scanRecorded(t, settledScanner(store), privateIn(p1))
	// The second process's scratch directory is another; a third
	// process's record check must not look in either's but its own.
	p2, p3 := scratch(t), scratch(t)
	scanRecorded(t, settledScanner(store), privateIn(p2))
	s3 := settledScanner(store)
	var mu sync.Mutex // stats may run in parallel
	var stats []string
	s3.fs.stat = func(p string) (os.FileInfo, error) {
		mu.Lock()
		stats = append(stats, p)
		mu.Unlock()
		return os.Stat(p)
	}
	mustScan(t, s3, privateIn(p3))
	for _, p := range stats {
		if under(p, p1) || under(p, p2) {
			t.Errorf("the third process stat'd %s, in another process's directory", p)
		}
	}
	if !slices.Contains(stats, p3+"/common.h") {
		t.Errorf("the third process did not probe its own directory: %v", stats)
	}
}

// TestPrivateInputID: inputs that differ only in their private directory
// share an id, and never share one with an input without one.
func TestPrivateInputID(t *testing.T) {
	_, privateIn := privateTree(t)
	a, b := privateIn("/run/user/1/kcache-pocl-1"), privateIn("/run/user/1/kcache-pocl-2")
	if inputID(a, "/wd") != inputID(b, "/wd") {
		t.Error("private directories enter the id")
	}
	plain := a
	plain.PrivateDir = ""
	if inputID(plain, "/wd") == inputID(a, "/wd") {
		t.Error("an input without a private directory shares the id of one with")
	}
	other := a
	other.MainDir = "/elsewhere"
	if inputID(other, "/wd") == inputID(a, "/wd") {
		t.Error("a MainDir outside the private directory is not in the id")
	}
}

// TestPrivateRecordRefusesAFoundFile: a record whose places under the
// private root are not all missing (never written so) is refused, not
// re-rooted.
func TestPrivateRecordRefusesAFoundFile(t *testing.T) {
	m := &memo{seen: []observation{{path: privateRoot + "/a.h", state: stateFile, settled: true}}}
	if m.reroot(privateRoot, "/p") {
		t.Error("a found file under the private root was re-rooted")
	}
	m = &memo{trace: []Dependency{{Path: privateRoot + "/a.h", Name: "a.h", Rule: RuleAbsent}}}
	if m.reroot(privateRoot, "/p") {
		t.Error("a dependency named other than by its path was re-rooted")
	}
	m = &memo{
		seen:  []observation{{path: privateRoot + "/a.h", state: stateMissing}, {path: privateRoot + "x/b.h", state: stateMissing}},
		trace: []Dependency{{Path: privateRoot + "/a.h", Name: privateRoot + "/a.h", Rule: RuleAbsent}},
	}
	if !m.reroot(privateRoot, "/p") || m.seen[0].path != "/p/a.h" || m.seen[1].path != privateRoot+"x/b.h" ||
		m.trace[0].Path != "/p/a.h" || m.trace[0].Name != "/p/a.h" {
		t.Errorf("re-rooted %+v", m)
	}
}

// TestPrivateRecordAcrossProcesses: processes of the test binary, each
// with a scratch directory of its own, as kcache's commands give PoCL:
// the second reads no header, and a header put into a later process's
// directory is found.
func TestPrivateRecordAcrossProcesses(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in a child")
	}
	root, privateIn := privateTree(t)
	settle(t, root)
	cache := t.TempDir()
	first := child(t, childJob{Cache: cache, In: privateIn(scratch(t))})
	want := freshKey(t, privateIn(scratch(t)))
	if !slices.Equal(first.Headers, want) || first.Reads == 0 {
		t.Fatalf("first process: key %v after %d reads\nwant %v", first.Headers, first.Reads, want)
	}
	hitReadsNothing(t, childJob{Cache: cache, In: privateIn(scratch(t))}, want)
	p := scratch(t)
	write(t, filepath.Join(p, "common.h"), "int shadow;\n")
	settle(t, p)
	rescans(t, childJob{Cache: cache, In: privateIn(p)}, want)
	// And an edit of a header in the search path, seen by a process
	// with yet another directory.
	write(t, filepath.Join(root, "inc/more.h"), "int more2;\n")
	settle(t, root)
	rescans(t, childJob{Cache: cache, In: privateIn(scratch(t))}, want)
}
