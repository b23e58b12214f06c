package deps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// tree writes files (path: content) under a new directory with an mtime an
// hour old, as files edited a while ago have, and returns the directory.
func tree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		write(t, filepath.Join(root, p), c)
	}
	old := time.Now().Add(-time.Hour)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chtimes(p, old, old) // as old as the files: listings are trusted
		}
		return nil
	})
	return root
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// counting makes s count the stats, reads and directory listings of its
// scans.
type counts struct{ stats, reads, lists atomic.Int64 }

func counting(s *Scanner) *counts {
	c := &counts{}
	// The files these tests just wrote count as settled, as they would
	// a few seconds later: what the counts show is the warm path.
	s.fs.now = func() time.Time { return time.Now().Add(time.Minute) }
	s.fs.stat = func(p string) (fs.FileInfo, error) { c.stats.Add(1); return os.Stat(p) }
	s.fs.readFile = func(p string) ([]byte, error) { c.reads.Add(1); return os.ReadFile(p) }
	s.fs.readDir = func(p string) ([]os.DirEntry, error) { c.lists.Add(1); return os.ReadDir(p) }
	return c
}

func mustScan(t testing.TB, s *Scanner, in Input) ([]kcache.Header, []Dependency) {
	t.Helper()
	h, tr, err := s.Scan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return h, tr
}

// found lists "rule name path" for each dependency, with absolute names
// and paths relative to root.
func found(root string, tr []Dependency) []string {
	var out []string
	rel := func(p string) string {
		if r, err := filepath.Rel(root, p); err == nil && filepath.IsAbs(p) {
			return r
		}
		return p
	}
	for _, d := range tr {
		out = append(out, d.Rule+" "+rel(d.Name)+" "+rel(d.Path))
	}
	return out
}

func TestScanSearchOrder(t *testing.T) {
	root := tree(t, map[string]string{
		"src/main.cl":  "",
		"src/q.h":      "#include \"n.h\"\n",
		"i2/a.h":       "#include \"n.h\"\n",
		"i2/n.h":       "",
		"i1/n.h":       "",
		"quote/only.h": "",
	})
	in := Input{
		Source:  []byte("#include \"q.h\"\n#include <a.h>\n#include \"only.h\"\n#include <only.h>\n"),
		Path:    filepath.Join(root, "src/main.cl"),
		WorkDir: root,
		Args:    SplitOptions("-iquote quote -I i1 -I " + filepath.Join(root, "i2")),
	}
	_, tr := mustScan(t, NewScanner(nil), in)
	want := []string{
		"include src/q.h src/q.h",
		"absent src/n.h src/n.h", // q.h's own directory comes first
		"absent quote/n.h quote/n.h",
		"include i1/n.h i1/n.h",
		"absent i1/a.h i1/a.h",
		"include i2/a.h i2/a.h",
		"include i2/n.h i2/n.h", // found beside a.h, before i1
		"absent src/only.h src/only.h",
		"include quote/only.h quote/only.h",
		// an angled include skips the includer's and -iquote directories
		"absent i1/only.h i1/only.h",
		"absent i2/only.h i2/only.h",
	}
	if got := found(root, tr); !slices.Equal(got, want) {
		t.Errorf("trace\n%q\nwant\n%q", got, want)
	}
}

// TestScanWorkDir checks that with SearchWorkDir (PoCL), the working
// directory comes first for quoted and angled includes, from every file,
// whatever Path says.
func TestScanWorkDir(t *testing.T) {
	root := tree(t, map[string]string{"wd/w.h": "#include <x.h>\n", "wd/x.h": "", "inc/x.h": "", "src/w.h": ""})
	in := Input{Source: []byte("#include \"w.h\"\n"), Path: filepath.Join(root, "src/k.cl"), WorkDir: filepath.Join(root, "wd"),
		Args: []string{"-I", filepath.Join(root, "inc")}, SearchWorkDir: true}
	_, tr := mustScan(t, NewScanner(nil), in)
	if got, want := found(root, tr), []string{"include w.h wd/w.h", "include x.h wd/x.h"}; !slices.Equal(got, want) {
		t.Errorf("trace %q, want %q", got, want)
	}
}

// TestScanShadowing checks that creating a header in a directory searched
// before the one where it was found changes the key.
func TestScanShadowing(t *testing.T) {
	root := tree(t, map[string]string{"i2/h.h": "#define V 2\n"})
	s := NewScanner(nil)
	in := Input{Source: []byte("#include <h.h>\n"), WorkDir: root, Args: SplitOptions("-I i1 -I i2")}
	before, _ := mustScan(t, s, in)
	write(t, filepath.Join(root, "i1/h.h"), "#define V 1\n")
	after, tr := mustScan(t, s, in)
	if slices.Equal(before, after) {
		t.Fatal("a header created earlier in the search path did not change the key")
	}
	if got, want := found(root, tr), []string{"include i1/h.h i1/h.h"}; !slices.Equal(got, want) {
		t.Errorf("trace %q, want %q", got, want)
	}
}

// TestScanWarmIsStatOnly checks ccache's direct mode: a second scan reads
// no file, and a file edited since is read again.
func TestScanWarmIsStatOnly(t *testing.T) {
	files := map[string]string{"k.cl": "#include \"a.h\"\n"}
	for i := range 50 {
		files[fmt.Sprintf("inc/h%d.h", i)] = fmt.Sprintf("#include \"h%d.h\"\n#define H%d\n", i+1, i)
	}
	files["inc/h50.h"] = ""
	root := tree(t, files)
	s := NewScanner(nil)
	c := counting(s)
	in := Input{Source: []byte("#include <h0.h>\n"), WorkDir: root, Args: []string{"-Iinc"}}
	cold, _ := mustScan(t, s, in)
	if c.reads.Load() != 51 {
		t.Fatalf("cold scan read %d files, want 51", c.reads.Load())
	}
	c.reads.Store(0)
	c.stats.Store(0)
	warm, _ := mustScan(t, s, in)
	if c.reads.Load() != 0 || c.stats.Load() != 51 || !slices.Equal(cold, warm) {
		t.Fatalf("warm scan: %d reads, %d stats, same headers %v; want 0 reads, 51 stats", c.reads.Load(), c.stats.Load(), slices.Equal(cold, warm))
	}
	write(t, filepath.Join(root, "inc/h50.h"), "#define EDITED\n")
	edited, _ := mustScan(t, s, in)
	if c.reads.Load() != 1 || slices.Equal(edited, warm) {
		t.Fatalf("after an edit: %d reads, headers changed %v; want 1 read and a change", c.reads.Load(), !slices.Equal(edited, warm))
	}
}

// TestScanTooNewIsReread checks that a file modified within the last
// seconds is read again even when its size and mtime are unchanged: it
// may have been written twice within one timestamp tick.
func TestScanTooNewIsReread(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "h.h")
	now := time.Now()
	os.WriteFile(path, []byte("#define A 1\n"), 0o644)
	os.Chtimes(path, now, now)
	s := NewScanner(nil)
	in := Input{Source: []byte("#include <h.h>\n"), WorkDir: root, Args: []string{"-I."}}
	first, _ := mustScan(t, s, in)
	os.WriteFile(path, []byte("#define A 2\n"), 0o644)
	os.Chtimes(path, now, now) // same size, same mtime
	if second, _ := mustScan(t, s, in); slices.Equal(first, second) {
		t.Fatal("an edit with unchanged size and mtime went unseen")
	}
}

func TestScanComputedInclude(t *testing.T) {
	root := tree(t, map[string]string{
		"OpenCL/inc_vendor.h": "#define COMPARE_M M2S(INCLUDE_PATH/inc_comp.cl)\n",
		"OpenCL/inc_comp.cl":  "",
		"OpenCL/inc_x.cl":     "",
	})
	src := "#ifdef KERNEL_STATIC\n#include M2S(INCLUDE_PATH/inc_vendor.h)\n#include M2S(INCLUDE_PATH/inc_x.cl)\n#endif\n#include COMPARE_M\n"
	in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true,
		Args: SplitOptions(`-D KERNEL_STATIC -I OpenCL -D INCLUDE_PATH=OpenCL -D "XM2S(x)=#x" -D "M2S(x)=XM2S(x)"`)}
	_, tr := mustScan(t, NewScanner(nil), in)
	want := []string{
		"computed-include OpenCL/inc_vendor.h OpenCL/inc_vendor.h",
		"computed-include OpenCL/inc_x.cl OpenCL/inc_x.cl",
		"computed-include OpenCL/inc_comp.cl OpenCL/inc_comp.cl",
	}
	if got := found(root, tr); !slices.Equal(got, want) {
		t.Errorf("trace\n%q\nwant\n%q", got, want)
	}
}

// TestScanRescansForNewMacros checks that a header whose computed include
// depends on its includer's macros is followed again when included after
// a new definition.
func TestScanRescansForNewMacros(t *testing.T) {
	root := tree(t, map[string]string{"pick.h": "#include XS(PART.h)\n", "one.h": "", "two.h": ""})
	src := strMacros + "#define PART one\n#include \"pick.h\"\n#undef PART\n#define PART two\n#include \"pick.h\"\n"
	_, tr := mustScan(t, NewScanner(nil), Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true})
	for _, name := range []string{"one.h", "two.h"} {
		if !slices.ContainsFunc(tr, func(d Dependency) bool { return d.Name == name && d.Rule == RuleComputedInclude }) {
			t.Errorf("%s missing from %q", name, found(root, tr))
		}
	}
}

// TestScanBuiltins checks that a macro of the compiler's own headers is a
// candidate: PoCL defines log, so M2S(log.h) may name another file.
func TestScanBuiltins(t *testing.T) {
	root := tree(t, map[string]string{"builtin.h": "#define log _cl_log\n", "log.h": "", "_cl_log.h": ""})
	in := Input{Source: []byte(strMacros + "#include XS(log.h)\n"), WorkDir: root, SearchWorkDir: true,
		Builtins: []string{filepath.Join(root, "builtin.h"), filepath.Join(root, "missing.h")}}
	_, tr := mustScan(t, NewScanner(nil), in)
	want := []string{"computed-include _cl_log.h _cl_log.h", "computed-include log.h log.h"}
	if got := found(root, tr); !slices.Equal(got, want) {
		t.Errorf("trace %q, want %q", got, want)
	}
}

// TestBuiltinsMention checks an include guard against the built-in
// headers: a guard they define (even across a line splice) makes the
// guarded definition uncertain, so the computed include keys the name
// unexpanded too; a guard they never mention, or mention without defining,
// is certainly undefined, and their macro table is not built for a name
// they never mention.
func TestBuiltinsMention(t *testing.T) {
	src := strMacros + "#include \"h.h\"\n#include XS(SYS.h)\n"
	for _, c := range []struct {
		builtin string
		both    bool // the key names SYS.h (no definition made) as well as cpu.h
		table   bool // the guard's question built the macro table
	}{
		{"#define OTHER 1\n", false, false},
		{"#define GUARD_X 1\n", true, true},
		{"#define GUARD_\\\nX 1\n", true, true},
		{"#define GUARD_\\  \r\nX 1\n", true, true},
		{"#define GUARD_\\\rX 1\n", true, true},
		{"// GUARD_X is not defined here\n", false, true},
		{"#define GUARD_XY 1\n", false, true},
	} {
		root := tree(t, map[string]string{"builtin.h": c.builtin, "h.h": "#ifndef GUARD_X\n#define GUARD_X\n#define SYS cpu\n#endif\n", "cpu.h": ""})
		in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, Builtins: []string{filepath.Join(root, "builtin.h")}}
		s := NewScanner(nil)
		counting(s) // the files count as settled, so the table is kept
		_, tr := mustScan(t, s, in)
		got := found(root, tr)
		if has := slices.Contains(got, "absent SYS.h SYS.h"); has != c.both || !slices.Contains(got, "computed-include cpu.h cpu.h") {
			t.Errorf("built-in %q: trace %q, want SYS.h named: %v", c.builtin, got, c.both)
		}
		// Without the computed include, whose expansion consults the
		// table for every name, only the guard asks about the headers.
		s = NewScanner(nil)
		counting(s)
		mustScan(t, s, Input{Source: []byte("#include \"h.h\"\n"), WorkDir: root, SearchWorkDir: true, Builtins: in.Builtins})
		if built := s.builtins.ok; built != c.table {
			t.Errorf("built-in %q: macro table built %v, want %v", c.builtin, built, c.table)
		}
	}
}

func TestUnsplice(t *testing.T) {
	for in, want := range map[string]string{
		"a\\\nb": "ab", "a\\ \t\r\nb": "ab", "a\\\rb": "ab", "a\\b": "a\\b", "a\\ b": "a\\ b", "a\\": "a\\", "\\\n\\\n": "",
	} {
		if got := string(unsplice([]byte(in))); got != want {
			t.Errorf("unsplice(%q) = %q, want %q", in, got, want)
		}
		if b := []byte(in); string(appendUnspliced(b[:0], b)) != want { // in place, as the built-in headers' text is
			t.Errorf("appendUnspliced in place of %q = %q, want %q", in, appendUnspliced(b[:0], b), want)
		}
	}
}

func TestScanForcedNextEmbedHasInclude(t *testing.T) {
	root := tree(t, map[string]string{
		"wd/pre.h": "",
		"a/h.h":    "#include_next <h.h>\n",
		"b/h.h":    "#define B\n",
		"a/d.bin":  "#include \"never-followed.h\"\n",
		"b/opt.h":  "",
	})
	src := "#include <h.h>\n#embed <d.bin>\n#if __has_include(<opt.h>) || __has_include(<none.h>)\n#endif\n"
	in := Input{Source: []byte(src), WorkDir: filepath.Join(root, "wd"), Args: SplitOptions("-include pre.h -I ../a -I ../b")}
	_, tr := mustScan(t, NewScanner(nil), in)
	want := []string{
		"forced-include pre.h wd/pre.h",
		"include ../a/h.h a/h.h", // named as the compiler opens it
		"include ../b/h.h b/h.h", // #include_next takes every file on the path
		"embed ../a/d.bin a/d.bin",
		"absent ../a/opt.h a/opt.h",
		"has-include ../b/opt.h b/opt.h",
		"absent ../a/none.h a/none.h",
		"absent ../b/none.h b/none.h",
	}
	if got := found(root, tr); !slices.Equal(got, want) {
		t.Errorf("trace\n%q\nwant\n%q", got, want)
	}
}

func TestScanDeclared(t *testing.T) {
	root := tree(t, map[string]string{"table.bin": "1"})
	s := NewScanner(nil)
	in := Input{Source: []byte("kernel void k() {}\n"), WorkDir: root, Depends: []string{"table.bin", "later.bin"}}
	h1, tr := mustScan(t, s, in)
	if got, want := found(root, tr), []string{"declared table.bin table.bin", "absent later.bin later.bin"}; !slices.Equal(got, want) {
		t.Errorf("trace %q, want %q", got, want)
	}
	write(t, filepath.Join(root, "table.bin"), "2")
	h2, _ := mustScan(t, s, in)
	write(t, filepath.Join(root, "later.bin"), "")
	h3, _ := mustScan(t, s, in)
	if slices.Equal(h1, h2) || slices.Equal(h2, h3) {
		t.Error("editing or creating a declared dependency did not change the key")
	}
}

// TestScanDeclaredDirectories checks that a declared dependency that is
// a directory puts every file under it in the key, each by its location;
// any addition or edit there changes it, nothing else does, and a warm
// scan reads nothing.
func TestScanDeclaredDirectories(t *testing.T) {
	root := tree(t, map[string]string{"inc/a.h": "", "inc/sub/b.h": "", "wd/c.h": ""})
	s := NewScanner(nil)
	c := counting(s)
	in := Input{Source: []byte("kernel void k() {}\n"), WorkDir: filepath.Join(root, "wd"),
		Depends: []string{".", "../inc", "../missing"}}
	h1, tr := mustScan(t, s, in)
	want := []string{
		"absent ../missing missing",
		"search-dir manifest ./c.h wd/c.h",
		"search-dir manifest ../inc/a.h inc/a.h",
		"search-dir manifest ../inc/sub/b.h inc/sub/b.h",
	}
	if got := found(root, tr); !slices.Equal(got, want) {
		t.Fatalf("trace\n%q\nwant\n%q", got, want)
	}
	c.reads.Store(0)
	c.lists.Store(0)
	c.stats.Store(0)
	if h, _ := mustScan(t, s, in); !slices.Equal(h, h1) || c.reads.Load() != 0 || c.lists.Load() != 0 {
		t.Fatalf("warm: same key %v, %d reads, %d listings; want the same key, no reads", slices.Equal(h, h1), c.reads.Load(), c.lists.Load())
	}
	if c.stats.Load() != 7 { // 3 roots, 1 subdirectory, 3 files
		t.Errorf("warm manifest took %d stats, want 7", c.stats.Load())
	}
	steps := []struct {
		what string
		do   func()
	}{
		{"edit", func() { write(t, filepath.Join(root, "inc/sub/b.h"), "x") }},
		{"add", func() { write(t, filepath.Join(root, "inc/sub/new.h"), "") }},
		{"create a missing directory", func() { write(t, filepath.Join(root, "missing/m.h"), "") }},
		{"remove", func() { os.Remove(filepath.Join(root, "wd/c.h")) }},
	}
	prev := h1
	for _, st := range steps {
		st.do()
		h, _ := mustScan(t, s, in)
		if slices.Equal(h, prev) {
			t.Errorf("%s in a search directory did not change the key", st.what)
		}
		prev = h
	}
}

func TestScanUncacheable(t *testing.T) {
	t.Run("too many files", func(t *testing.T) {
		root := t.TempDir()
		for i := range maxManifestFiles + 1 {
			if err := os.WriteFile(filepath.Join(root, fmt.Sprint(i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		in := Input{Source: []byte("#include UNKNOWN_AFTER_MISSING\n#include <missing.h>\n#include NAME\n"), WorkDir: root, SearchWorkDir: true}
		if _, _, err := NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
			t.Fatalf("err = %v, want ErrUncacheable", err)
		}
	})
	t.Run("unreadable directory", func(t *testing.T) {
		root := tree(t, map[string]string{"locked/x.h": ""})
		s := NewScanner(nil)
		s.fs.readDir = func(p string) ([]os.DirEntry, error) {
			if filepath.Base(p) == "locked" {
				return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.EACCES}
			}
			return os.ReadDir(p)
		}
		in := Input{Source: []byte("#include <missing.h>\n#include NAME\n"), WorkDir: root, SearchWorkDir: true}
		if _, _, err := s.Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
			t.Fatalf("err = %v, want ErrUncacheable", err)
		}
	})
}

// TestScanUnseenHeaderRefuses checks that once an include was not found
// (the compiler may find it in its own directories), a computed include
// naming an identifier nobody defined is no longer trusted, and the
// source is uncacheable: widening to the search directories would not
// cover a name holding "..".
func TestScanUnseenHeaderRefuses(t *testing.T) {
	root := tree(t, map[string]string{"x.h": ""})
	src := strMacros + "#include XS(x.h)\n"
	_, tr := mustScan(t, NewScanner(nil), Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true})
	if got := found(root, tr); !slices.Equal(got, []string{"computed-include x.h x.h"}) {
		t.Errorf("trace %q", got)
	}
	_, _, err := NewScanner(nil).Scan(context.Background(), Input{Source: []byte("#include <vendor.h>\n" + src), WorkDir: root, SearchWorkDir: true})
	if !errors.Is(err, ErrUncacheable) {
		t.Errorf("err = %v after an unseen header, want ErrUncacheable", err)
	}
}

func TestScanConcurrent(t *testing.T) {
	root := tree(t, map[string]string{"a.h": "#include \"b.h\"\n", "b.h": ""})
	s := NewScanner(nil)
	in := Input{Source: []byte("#include \"a.h\"\n#include NOPE\n"), WorkDir: root, SearchWorkDir: true}
	want, _ := mustScan(t, s, in)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for range 50 {
				if i%4 == 0 {
					s.files.mu.Lock()
					clear(s.files.entries)
					s.files.mu.Unlock()
				}
				h, _, err := s.Scan(context.Background(), in)
				if err != nil || !slices.Equal(h, want) {
					t.Errorf("concurrent scan: %v, equal %v", err, slices.Equal(h, want))
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestScanCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := NewScanner(nil).Scan(ctx, Input{Source: []byte("#include \"a.h\"\n"), WorkDir: t.TempDir()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestScanLogsReasonOnce checks that a widened key says why, at debug
// level, once per source and reason however often it is scanned.
func TestScanLogsReasonOnce(t *testing.T) {
	root := tree(t, map[string]string{"a.h": ""})
	var logs strings.Builder
	s := NewScanner(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	in := Input{Source: []byte("#include __FILE_NAME__\n"), Path: "k.cl", WorkDir: root, SearchWorkDir: true}
	for i := range 3 {
		write(t, filepath.Join(root, fmt.Sprintf("new%d.h", i)), "") // a change: no memo applies
		if _, _, err := s.Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
			t.Fatalf("err = %v, want ErrUncacheable", err)
		}
	}
	if n := strings.Count(logs.String(), "cannot be expanded"); n != 1 {
		t.Errorf("reason logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "level=DEBUG") || !strings.Contains(logs.String(), "source=k.cl") {
		t.Errorf("log lacks level or source:\n%s", logs.String())
	}
}

// TestScanEveryCandidate checks the superset for a compiler whose search
// order is uncertain: every file an include could name is keyed.
func TestScanEveryCandidate(t *testing.T) {
	root := tree(t, map[string]string{"wd/h.h": "", "inc/h.h": "#include \"n.h\"\n", "inc/n.h": ""})
	in := Input{Source: []byte("#include <h.h>\n"), WorkDir: filepath.Join(root, "wd"), Args: []string{"-I../inc"}, SearchWorkDir: true, EveryCandidate: true}
	_, tr := mustScan(t, NewScanner(nil), in)
	want := []string{"include h.h wd/h.h", "include ../inc/h.h inc/h.h", "include ../inc/n.h inc/n.h", "absent n.h wd/n.h"}
	if got := found(root, tr); !slices.Equal(got, want) {
		t.Errorf("trace %q, want %q", got, want)
	}
}

// TestScanRootSearchDirIsUncacheable: a search directory that is / is
// refused at the file count, before any file is read.
func TestScanRootSearchDirIsUncacheable(t *testing.T) {
	s := NewScanner(nil)
	c := counting(s)
	in := Input{Source: []byte("#include __FILE_NAME__\n"), WorkDir: "/", SearchWorkDir: true}
	if _, _, err := s.Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
		t.Fatalf("err = %v, want ErrUncacheable", err)
	}
	if c.reads.Load() != 0 {
		t.Errorf("%d files read before giving up", c.reads.Load())
	}
}

// TestBuiltinsReadOncePerFile: a built-in header reached by two paths (a
// directory link, as clang's version directories are) is read and lexed
// once, by the first path, and still answers for both; a copy of it, a
// file of its own, is lexed too, and for the text compared with the first
// (TestBuiltinsCopiesShareText), not read whole.
func TestBuiltinsReadOncePerFile(t *testing.T) {
	root := tree(t, map[string]string{
		"inc/builtin.h":  "#define GUARD_X 1\n",
		"copy/builtin.h": "#define GUARD_X 1\n",
		"h.h":            "#ifndef GUARD_X\n#define GUARD_X\n#define SYS cpu\n#endif\n",
		"cpu.h":          "",
	})
	if err := os.Symlink("inc", filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	builtins := []string{filepath.Join(root, "alias/builtin.h"), filepath.Join(root, "inc/builtin.h"), filepath.Join(root, "copy/builtin.h")}
	in := Input{Source: []byte(strMacros + "#include \"h.h\"\n#include XS(SYS.h)\n"), WorkDir: root, SearchWorkDir: true, Builtins: builtins}
	s := NewScanner(nil)
	counting(s)
	var mu sync.Mutex
	reads := map[string]int{}
	s.fs.readFile = func(p string) ([]byte, error) {
		mu.Lock()
		reads[p]++
		mu.Unlock()
		return os.ReadFile(p)
	}
	_, tr := mustScan(t, s, in)
	if got := found(root, tr); !slices.Contains(got, "absent SYS.h SYS.h") || !slices.Contains(got, "computed-include cpu.h cpu.h") {
		t.Errorf("trace %q: the guard the built-in headers define must leave SYS.h named", got)
	}
	if reads[builtins[1]] != 0 {
		t.Errorf("%s read %d times: it is the file of %s", builtins[1], reads[builtins[1]], builtins[0])
	}
	// The text (for the guard's mention) and the macro table read the
	// first file once each; the copy, the same bytes, is read for the
	// table alone.
	if reads[builtins[0]] != 2 || reads[builtins[2]] != 1 {
		t.Errorf("reads %v, want 2 of the first file and 1 of its copy", reads)
	}
	// Every path is still stat'd for the memo: an edit through any of
	// them is seen.
	for _, p := range builtins {
		if !slices.ContainsFunc(s.memos.get(inputID(in, root)).seen, func(o observation) bool { return o.path == p }) {
			t.Errorf("%s not observed", p)
		}
	}
}

// TestBuiltinsCopiesShareText: a built-in header with the same bytes as
// an earlier one (PoCL's copy of clang's opencl-c.h) shares its text; one
// as long that differs, at its first byte, its last, or past a compare
// buffer's length, keeps its own, and a guard only it defines is found in
// it.
func TestBuiltinsCopiesShareText(t *testing.T) {
	long := strings.Repeat("// filler\n", compareBufSize/10+7)
	for _, c := range []struct {
		name, first, second string
		shared              bool // the second file's text is the first's
		guarded             bool // GUARD_Y is defined by the headers
	}{
		{"same bytes", "#define GUARD_X 1\n", "#define GUARD_X 1\n", true, false},
		{"same bytes past the buffer", long + "#define GUARD_Y 1\n", long + "#define GUARD_Y 1\n", true, true},
		{"last byte differs", "#define GUARD_X 1\n", "#define GUARD_X 1 ", false, false},
		{"first byte differs", "#define GUARD_Y 1\n", "+define GUARD_Y 1\n", false, true},
		{"differs past the buffer", long + "#define GUARD_X 1\n", long + "#define GUARD_Y 1\n", false, true},
		{"only the copy defines it", "#define GUARD_X 1\n", "#define GUARD_Y 1\n", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, map[string]string{
				"a/builtin.h": c.first, "b/builtin.h": c.second,
				"h.h":   "#ifndef GUARD_Y\n#define GUARD_Y\n#define SYS cpu\n#endif\n",
				"cpu.h": "",
			})
			in := Input{Source: []byte(strMacros + "#include \"h.h\"\n#include XS(SYS.h)\n"), WorkDir: root, SearchWorkDir: true,
				Builtins: []string{filepath.Join(root, "a/builtin.h"), filepath.Join(root, "b/builtin.h")}}
			s := NewScanner(nil)
			counting(s)
			_, tr := mustScan(t, s, in)
			if got := slices.Contains(found(root, tr), "absent SYS.h SYS.h"); got != c.guarded {
				t.Errorf("SYS.h named %v, want %v (the guard defined by the headers)", got, c.guarded)
			}
			text := s.builtinText.val
			if text == nil || len(text.texts) != 2 {
				t.Fatalf("kept text %+v, want two files'", text)
			}
			if got := sharesText(text.texts[:1], text.texts[1]); got != c.shared {
				t.Errorf("the copy shares the first file's text: %v, want %v", got, c.shared)
			}
			if want := unsplice([]byte(c.second)); !bytes.Equal(text.texts[1], want) {
				t.Errorf("the second file's text is not its own bytes")
			}
		})
	}
}

// TestBuiltinsMentionShared: scans of several sources at once, on one
// Scanner, share the built-in headers' text and its answers: each guard
// gets the answer the text gives (a guard the headers define leaves the
// guarded definition uncertain), and an answer is kept for the next scan.
func TestBuiltinsMentionShared(t *testing.T) {
	root := tree(t, map[string]string{
		"builtin.h": "#define GUARD_0 1\n// GUARD_1 is mentioned, not defined\n",
		"cpu.h":     "",
	})
	for i := range 4 {
		write(t, filepath.Join(root, fmt.Sprintf("h%d.h", i)), fmt.Sprintf("#ifndef GUARD_%d\n#define GUARD_%d\n#define SYS cpu\n#endif\n", i, i))
	}
	s := NewScanner(nil)
	counting(s)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := g % 4
			in := Input{Source: []byte(fmt.Sprintf("%s// %d\n#include \"h%d.h\"\n#include XS(SYS.h)\n", strMacros, g, i)), WorkDir: root, SearchWorkDir: true,
				Builtins: []string{filepath.Join(root, "builtin.h")}}
			_, tr, err := s.Scan(context.Background(), in)
			if err != nil {
				t.Error(err)
				return
			}
			// Only GUARD_0 is defined by the built-in headers.
			if got, want := slices.Contains(found(root, tr), "absent SYS.h SYS.h"), i == 0; got != want {
				t.Errorf("guard %d: SYS.h named %v, want %v", i, got, want)
			}
		}()
	}
	wg.Wait()
	text := s.builtinText.val
	if text == nil {
		t.Fatal("the built-in headers' text was not kept")
	}
	text.mu.Lock()
	defer text.mu.Unlock()
	for i, want := range []bool{true, true, false, false} {
		if got, ok := text.answers[fmt.Sprintf("GUARD_%d", i)]; !ok || got != want {
			t.Errorf("GUARD_%d: kept answer %v (kept: %v), want %v", i, got, ok, want)
		}
	}
}

// TestScanNonRegularFiles: a pipe where the compiler looks for a header
// or a declared dependency makes the source uncacheable. clang includes a
// FIFO's text (#include "h.h" with h.h a FIFO compiles what was written
// to it), which no key of the scan's could hold; keyed as absent, two
// builds fed different text would share a key. The control: the same
// places as regular files give a key.
func TestScanNonRegularFiles(t *testing.T) {
	cases := []struct {
		name string
		fifo string // made a FIFO under the root
		in   func(root string) Input
	}{
		{"include candidate", "h.h", func(root string) Input {
			return Input{Source: []byte("#include \"h.h\"\n"), WorkDir: root, SearchWorkDir: true}
		}},
		{"a candidate ahead of a regular header", "a/h.h", func(root string) Input {
			return Input{Source: []byte("#include <h.h>\n"), WorkDir: root, Args: []string{"-Ia", "-Ib"}}
		}},
		{"declared dependency", "table.bin", func(root string) Input {
			return Input{Source: []byte("kernel void k() {}\n"), WorkDir: root, Depends: []string{"table.bin"}}
		}},
		{"file of a declared directory", "inc/x.h", func(root string) Input {
			return Input{Source: []byte("kernel void k() {}\n"), WorkDir: root, Depends: []string{"inc"}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"b/h.h": "#define V 1\n", c.fifo: "#define V 2\n"}
			root := tree(t, files)
			if _, _, err := NewScanner(nil).Scan(context.Background(), c.in(root)); err != nil {
				t.Fatalf("control, %s a regular file: %v", c.fifo, err)
			}
			root = tree(t, map[string]string{"b/h.h": "#define V 1\n", filepath.Join(filepath.Dir(c.fifo), "other"): ""})
			if err := syscall.Mkfifo(filepath.Join(root, c.fifo), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, _, err := NewScanner(nil).Scan(context.Background(), c.in(root)); !errors.Is(err, ErrUncacheable) {
				t.Errorf("%s a FIFO: err = %v, want ErrUncacheable", c.fifo, err)
			}
		})
	}
}

// TestPipeObservationNeverHolds: a memo or dependency record that
// observed a pipe (as one written before pipes made a source
// uncacheable did, keying it as absent) never holds, so the source is
// scanned again and refused; the control, a missing path, holds.
func TestPipeObservationNeverHolds(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "h.h")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	fsys := osFileSystem()
	now := time.Now()
	missing := &memo{seen: []observation{fsys.observe(filepath.Join(root, "none.h"), now)}}
	if !missing.valid(fsys) {
		t.Fatal("control: a memo of a missing header does not hold")
	}
	pipe := &memo{seen: []observation{fsys.observe(fifo, now)}}
	if pipe.seen[0].state != stateOther || pipe.valid(fsys) {
		t.Errorf("a memo that observed a pipe (state %v) holds", pipe.seen[0].state)
	}
}
