package deps

import (
	"context"
	"hash/maphash"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kcache/kcache"
)

// changedInputs returns, for each field of Input, a copy of base with
// that field changed, named by the field.
func changedInputs(t *testing.T, base Input) map[string]Input {
	t.Helper()
	out := map[string]Input{}
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		in := cloneInput(base)
		f := reflect.ValueOf(&in).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("changed")
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Uint8:
			f.SetUint(f.Uint() + 1)
		case reflect.Slice:
			if f.Type().Elem().Kind() == reflect.String {
				f.Set(reflect.Append(f, reflect.ValueOf("changed")))
			} else {
				f.Set(reflect.Append(f, reflect.ValueOf(byte('x'))))
			}
		default:
			t.Fatalf("Input.%s: a %s; teach this test, sameInput, hashInput and cloneInput about it",
				v.Type().Field(i).Name, f.Kind())
		}
		out[v.Type().Field(i).Name] = in
	}
	return out
}

// TestSameInputCoversEveryField: the memo cache finds an input's memo by
// sameInput and hashInput; a field either misses would serve one input's
// headers for another. cloneInput must copy every slice.
func TestSameInputCoversEveryField(t *testing.T) {
	base := Input{Source: []byte("s"), Args: []string{"-Ia"}, Depends: []string{"d"}, Builtins: []string{"b"},
		SystemDirs: []string{"/s"}, CompilerHeaders: []string{"h"}, CompilerMacros: []string{"M"}}
	seed := maphash.MakeSeed()
	if !sameInput(base, cloneInput(base)) || hashInput(seed, base, "/wd") != hashInput(seed, cloneInput(base), "/wd") {
		t.Fatal("an input differs from its copy")
	}
	for name, in := range changedInputs(t, base) {
		if sameInput(base, in) || sameInput(in, base) {
			t.Errorf("Input.%s is not compared by sameInput", name)
		}
		if hashInput(seed, base, "/wd") == hashInput(seed, in, "/wd") {
			t.Errorf("Input.%s is not hashed by hashInput", name)
		}
	}
	if hashInput(seed, base, "/wd") == hashInput(seed, base, "/other") {
		t.Error("the working directory is not hashed")
	}
	// A copy shares no memory with the caller's input.
	c := cloneInput(base)
	c.Source[0], c.Args[0], c.Depends[0], c.Builtins[0] = 'x', "x", "x", "x"
	c.SystemDirs[0], c.CompilerHeaders[0], c.CompilerMacros[0] = "x", "x", "x"
	if !reflect.DeepEqual(base, Input{Source: []byte("s"), Args: []string{"-Ia"}, Depends: []string{"d"}, Builtins: []string{"b"},
		SystemDirs: []string{"/s"}, CompilerHeaders: []string{"h"}, CompilerMacros: []string{"M"}}) {
		t.Errorf("cloneInput shares memory: %+v", base)
	}
}

// TestMemoKeepsItsOwnInput: a caller that rewrites its source in place
// after a scan gets a fresh scan of the new text, not the memo of the old.
func TestMemoKeepsItsOwnInput(t *testing.T) {
	root := tree(t, map[string]string{"a.h": "int a;\n", "b.h": "int b;\n"})
	s := NewScanner(nil)
	c := counting(s)
	src := []byte("#include \"a.h\"\n")
	in := Input{Source: src, WorkDir: root, SearchWorkDir: true, CompleteSearchPath: true, Trigraphs: TrigraphsOn}
	h1, _ := mustScan(t, s, in)
	copy(src, "#include \"b.h\"\n")
	h2, _ := mustScan(t, s, in)
	if len(h1) != 1 || len(h2) != 1 || h1[0].Name != "a.h" || h2[0].Name != "b.h" {
		t.Fatalf("headers %v then %v, want a.h then b.h", h1, h2)
	}
	reads := c.reads.Load()
	mustScan(t, s, in)
	if c.reads.Load() != reads {
		t.Error("a warm scan of an unchanged input read a file")
	}
}

// TestMemoManyInputsConcurrently: inputs that differ only in their
// source, scanned from many goroutines at once, each get their own
// headers, warm or cold.
func TestMemoManyInputsConcurrently(t *testing.T) {
	files := map[string]string{}
	for i := range 8 {
		files[filepath.Join("inc", string(rune('a'+i))+".h")] = "int x;\n"
	}
	root := tree(t, files)
	s := NewScanner(nil)
	counting(s)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for r := range 50 {
				name := string(rune('a'+(g+r)%8)) + ".h"
				in := Input{Source: []byte("#include \"" + name + "\"\n"), WorkDir: root, Args: []string{"-Iinc"},
					CompleteSearchPath: true, Trigraphs: TrigraphsOn}
				h, _, err := s.Scan(context.Background(), in)
				if err != nil {
					t.Error(err)
					return
				}
				if len(h) != 1 || h[0].Name != filepath.Join("inc", name) {
					t.Errorf("%s: headers %v", name, h)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestMemoBounded: past maxMemoBytes of inputs the memos are forgotten,
// and a forgotten input is scanned again, correctly.
func TestMemoBounded(t *testing.T) {
	root := tree(t, map[string]string{"a.h": "int a;\n"})
	s := NewScanner(nil)
	counting(s)
	big := make([]byte, maxMemoBytes/3)
	for i := range big {
		big[i] = '\n'
	}
	first := Input{Source: append([]byte("#include \"a.h\"\n"), big...), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
	mustScan(t, s, first)
	for i := range 3 {
		in := first
		in.Source = append([]byte{byte('0' + i), '\n'}, first.Source...)
		mustScan(t, s, in)
	}
	if s.memos.bytes > maxMemoBytes {
		t.Errorf("memos hold %d bytes, more than %d", s.memos.bytes, maxMemoBytes)
	}
	if m, _ := s.memos.lookup(first, root); m != nil {
		t.Error("the first input's memo was kept past the bound")
	}
	h, _ := mustScan(t, s, first)
	if len(h) != 1 || h[0].Name != "a.h" {
		t.Fatalf("headers %v", h)
	}
}

// TestWorkDirIsGetwd: workDir answers as os.Getwd, whatever $PWD says:
// unset, the directory itself, a symbolic link to it, or elsewhere.
func TestWorkDirIsGetwd(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	// A name longer than getwd's buffer, which syscall.Getwd then reads.
	long := filepath.Join(real, strings.Repeat("d", 200), strings.Repeat("e", 200))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, wd := range []string{link, long} {
		t.Chdir(wd) // sets $PWD to wd
		checkWorkDir(t, dir, real, link)
	}
}

// checkWorkDir checks workDir against os.Getwd with $PWD unset, naming
// the working directory, another directory, relative, and no directory.
func checkWorkDir(t *testing.T, dir, real, link string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, pwd := range []string{"", real, link, dir, wd, "relative", "/no/such/dir"} {
		t.Setenv("PWD", pwd)
		if pwd == "" {
			os.Unsetenv("PWD")
		}
		want, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		got, err := workDir()
		if err != nil || got != want {
			t.Errorf("PWD=%q: workDir %q, %v; os.Getwd %q", pwd, got, err, want)
		}
	}
}

// TestAppendHeadersIsScan: AppendHeaders appends what Scan returns as
// headers, the day's header included, cold and warm.
func TestAppendHeadersIsScan(t *testing.T) {
	root := tree(t, map[string]string{"a.h": "int a;\n", "d.h": "const char *d = __DATE__;\n"})
	for _, src := range []string{"#include \"a.h\"\n", "#include \"a.h\"\n#include \"d.h\"\n"} {
		s := NewScanner(nil)
		counting(s)
		in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, CompleteSearchPath: true, Trigraphs: TrigraphsOn}
		for range 2 {
			pre := kcache.Header{Name: "memory:x"}
			got, err := s.AppendHeaders(context.Background(), []kcache.Header{pre}, in)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := mustScan(t, s, in)
			if !reflect.DeepEqual(got, append([]kcache.Header{pre}, want...)) {
				t.Errorf("%q: AppendHeaders %v, Scan %v", src, got, want)
			}
			if dated := got[len(got)-1].Name == DateHeader; dated != strings.Contains(src, "d.h") {
				t.Errorf("%q: headers %v: the day's header missing or extra", src, got)
			}
		}
	}
}

// TestMemoMacrosShared: the memos of inputs whose compiler macros are
// equal share one copy of the list, never the caller's; an input with
// other macros gets its own copy, and every memo is still found only by
// an input equal to its own.
func TestMemoMacrosShared(t *testing.T) {
	c := newMemoCache()
	macros := func(names ...string) []string { return append([]string(nil), names...) }
	a := Input{Source: []byte("a"), CompilerMacros: macros("M1", "M2", "M3")}
	b := Input{Source: []byte("b"), CompilerMacros: macros("M1", "M2", "M3")}
	d := Input{Source: []byte("d"), CompilerMacros: macros("M1", "MX", "M3")}
	for i, in := range []Input{a, b, d} {
		h := hashInput(c.seed, in, "/wd")
		c.put(h, kcache.Digest{byte(i)}, in, "/wd", &memo{headers: []kcache.Header{{Name: string(in.Source)}}})
	}
	kept := func(in Input) []string {
		t.Helper()
		sl := c.slots[hashInput(c.seed, in, "/wd")]
		if sl == nil || !sameInput(sl.in, in) {
			t.Fatalf("no slot of %q", in.Source)
		}
		return sl.in.CompilerMacros
	}
	ka, kb, kd := kept(a), kept(b), kept(d)
	if &ka[0] != &kb[0] {
		t.Error("equal macros are copied per input")
	}
	if &ka[0] == &a.CompilerMacros[0] || &kb[0] == &b.CompilerMacros[0] || &kd[0] == &d.CompilerMacros[0] {
		t.Fatal("a memo keeps the caller's list")
	}
	if &kd[0] == &ka[0] || kd[1] != "MX" {
		t.Errorf("other macros share a list: %q", kd)
	}
	// The callers' lists rewritten in place change no memo.
	a.CompilerMacros[1], b.CompilerMacros[1] = "changed", "changed"
	if ka[1] != "M2" || kb[1] != "M2" {
		t.Fatalf("a memo's macros follow the caller's list: %q %q", ka, kb)
	}
	if m, _ := c.lookup(a, "/wd"); m != nil {
		t.Error("an input with other macros found a memo")
	}
	a.CompilerMacros[1] = "M2"
	if m, _ := c.lookup(a, "/wd"); m == nil || m.headers[0].Name != "a" {
		t.Errorf("memo of a: %+v", m)
	}
}
