package deps_test

// Differential regression tests of the search path and of option values,
// against clang-15: the order clang gives duplicate search directories
// (a user directory that is also a system one moves to the system one's
// place), a joined '=' (part of the value but for -I under a sysroot),
// and a line break in an option (clang cuts a -D body there; elsewhere
// it starts a line of clang's predefines). The PoCL cases run through the
// differential harness (compare); the argument-vector cases, which PoCL's
// split cannot make (it splits at every line break), compile with clang's
// driver given the same vector as Input.Args. clang-15 missing skips
// them, and fails them under KCACHE_REQUIRE_REAL=1.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache/deps"
)

// writeTree writes files and symbolic links (name to target) under root.
func writeTree(t *testing.T, root string, files, links map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// keys reports whether trace holds the file named name.
func keys(trace []deps.Dependency, name string) bool {
	return slices.ContainsFunc(trace, func(d deps.Dependency) bool { return d.Rule != deps.RuleAbsent && d.Name == name })
}

// TestSearchPathAsClang compiles as PoCL does (-I. first) with options
// that name one directory twice, or join a value with '='. Each case must
// come out as want: exact where the scan models clang, refused where
// NVRTC 13 reads the option otherwise (measured on the H200: it drops the
// '=' of -I=DIR and -include=FILE); reads is a file clang reads, which
// the key must hold.
func TestSearchPathAsClang(t *testing.T) {
	clang := requireClang(t)
	// PoCL's -I. comes first: x.h in the root shadows every other.
	xs := map[string]string{"m.cl": "#include <x.h>\n", "A/x.h": "//A\n", "B/x.h": "//B\n", "C/x.h": "//C\n"}
	dot := map[string]string{"m.cl": "#include <x.h>\n", "B/x.h": "//B\n", "x.h": "//dot\n"}
	eq := map[string]string{"q.cl": "#include <q.h>\n", "qq.cl": "#include \"q.h\"\n", "e.cl": "int x;\n",
		"=inc/q.h": "//eq\n", "inc/q.h": "//plain\n", "=f.h": "//eq\n", "f.h": "//plain\n"}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		links   map[string]string
		main    string
		options string
		want    verdict
		reads   string
	}{
		// clang drops -IA for -isystem A, -idirafter A, or A by
		// another name, and searches B first.
		{"I-isystem", xs, nil, "m.cl", "-IA -IB -isystem A", exact, "B/x.h"},
		{"I-idirafter", xs, nil, "m.cl", "-IA -IB -idirafter A", exact, "B/x.h"},
		{"I-isystem-dot", xs, nil, "m.cl", "-IA -IB -isystem A/.", exact, "B/x.h"},
		{"I-isystem-link", xs, map[string]string{"L": "A"}, "m.cl", "-IA -IB -isystem L", exact, "B/x.h"},
		{"link-I-isystem", xs, map[string]string{"L": "A"}, "m.cl", "-IL -IB -isystem A", exact, "B/x.h"},
		{"isystem-first-in-options", xs, nil, "m.cl", "-isystem A -IA -IB", exact, "B/x.h"},
		// PoCL's own -I. is a user directory too.
		{"pocl-dot-isystem", dot, nil, "m.cl", "-IB -isystem .", exact, "B/x.h"},
		{"pocl-dot-idirafter", dot, nil, "m.cl", "-IB -idirafter ROOT", exact, "B/x.h"},
		// Nothing else moves.
		{"I-twice", xs, nil, "m.cl", "-IA -IB -IA/.", exact, "A/x.h"},
		{"isystem-elsewhere", xs, nil, "m.cl", "-IA -IB -isystem C", exact, "A/x.h"},
		{"isystem-missing", xs, nil, "m.cl", "-IA -IB -isystem none", exact, "A/x.h"},
		{"isystem-twice", xs, nil, "m.cl", "-isystem A -isystem B -idirafter A", exact, "A/x.h"},
		{"iquote-and-I", map[string]string{"m.cl": "#include \"x.h\"\n", "A/x.h": "//A\n", "B/x.h": "//B\n"},
			nil, "m.cl", "-iquote A -IB -IA", exact, "A/x.h"},
		// A joined '=' is part of the value.
		{"isystem-eq", eq, nil, "q.cl", "-isystem=inc", exact, "=inc/q.h"},
		{"iquote-eq", eq, nil, "qq.cl", "-iquote=inc", exact, "=inc/q.h"},
		{"idirafter-eq", eq, nil, "q.cl", "-idirafter=inc", exact, "=inc/q.h"},
		{"imacros-eq", eq, nil, "e.cl", "-imacros=f.h", exact, "=f.h"},
		{"I-separate-eq", eq, nil, "q.cl", "-I =inc", exact, "=inc/q.h"},
		{"include-eq", eq, nil, "e.cl", "-include=f.h", refused, "=f.h"},
		{"I-eq", eq, nil, "q.cl", "-I=inc", refused, "=inc/q.h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "root")
			writeTree(t, root, tc.files, tc.links)
			src, err := os.ReadFile(filepath.Join(root, tc.main))
			if err != nil {
				t.Fatal(err)
			}
			opts := strings.ReplaceAll(tc.options, "ROOT", root)
			run := clangRun{clang: clang, wd: root, options: opts, main: filepath.Join(root, tc.main)}
			o := compare(deps.NewScanner(nil), run, src, opts, root, dir)
			if o.v != tc.want {
				t.Fatalf("%s: %s, want %s (missed %q; %s)", opts, verdictNames[o.v], verdictNames[tc.want], o.missed, o.detail)
			}
			if o.v == exact && !keys(o.trace, tc.reads) {
				t.Errorf("%s: the key holds no %s", opts, tc.reads)
			}
			if o.v == refused {
				files, _, err := run.deps(dir)
				if err != nil || !slices.Contains(files, filepath.Join(root, tc.reads)) {
					t.Errorf("%s: clang reads %q (%v), not %s: the case shows nothing", opts, files, err, tc.reads)
				}
			}
		})
	}
}

// argvCase is a compile with an argument vector that no build-option
// string PoCL splits can make: the scan's Args are args as they stand.
type argvCase struct {
	name  string
	files map[string]string
	src   string
	args  []string
	want  verdict // exact or refused
	reads string  // a file clang reads, relative to the root ("" for none)
}

// checkArgv compiles tc with clang-15's driver as C++17 (no trigraphs,
// no standard directories) in a new root, scans the same, and judges as
// compare does: every file clang lists must be keyed, unless the scan
// refused the source.
func checkArgv(t *testing.T, clang string, tc argvCase) {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, tc.files, nil)
	main := filepath.Join(root, "m.cc")
	if err := os.WriteFile(main, []byte(tc.src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := make([]string, len(tc.args))
	for i, a := range tc.args {
		args[i] = strings.ReplaceAll(a, "ROOT", root)
	}
	argv := append([]string{"-x", "c++", "-std=c++17", "-nostdinc", "-M", "-MT", "k"}, args...)
	cmd := exec.Command(clang, append(argv, main)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("clang %q: %v: %s", args, err, out)
	}
	read := makePrereqs(string(out))
	if tc.reads != "" && !slices.Contains(read, tc.reads) && !slices.Contains(read, filepath.Join(root, tc.reads)) {
		t.Fatalf("clang %q reads %q, not %s: the case shows nothing", args, read, tc.reads)
	}
	in := deps.Input{Source: []byte(tc.src), Path: main, WorkDir: root, Args: args, CompleteSearchPath: true, Trigraphs: deps.TrigraphsOff}
	_, trace, err := deps.NewScanner(nil).Scan(context.Background(), in)
	switch {
	case errors.Is(err, deps.ErrUncacheable):
		if tc.want != refused {
			t.Errorf("%q: refused (%v), want %s", args, err, verdictNames[tc.want])
		}
		return
	case err != nil:
		t.Fatalf("%q: %v", args, err)
	case tc.want == refused:
		t.Errorf("%q: the scan keys %v where it cannot know what the compiler reads", args, trace)
	}
	have := map[fileID]bool{}
	for _, d := range trace {
		if id, ok := idOf(d.Path); ok && d.Rule != deps.RuleAbsent {
			have[id] = true
		}
	}
	mainID, _ := idOf(main)
	for _, f := range read {
		if !filepath.IsAbs(f) {
			f = root + "/" + f
		}
		if id, ok := idOf(f); !ok || (id != mainID && !have[id]) {
			t.Errorf("%q: clang reads %s, which the key misses (trace %v)", args, f, trace)
		}
	}
}

// TestDefineValueAsClang: clang-15 cuts a -D body at its first newline or
// carriage return (and warns); every other control character stays in it
// and stringizes as clang spells it (a tab, vertical tab or form feed as
// one blank). A carriage return with no newline is refused: NVRTC 13
// reads it as a blank (measured on the H200), naming "a.h .x"; so is
// -D=Y, which NVRTC reads as -DY (clang defines Y empty).
func TestDefineValueAsClang(t *testing.T) {
	clang := requireClang(t)
	const xs = "#define S(x) #x\n#define X(x) S(x)\n#include X(H)\n"
	files := map[string]string{"a.h": "//a\n", "a.h .x": "//spaced\n", "a.h\x01.x": "//soh\n", "a.h\x7f.x": "//del\n"}
	for _, tc := range []argvCase{
		{"newline", files, xs, []string{"-DH=a.h\n.x"}, exact, "a.h"},
		{"newline-then-return", files, xs, []string{"-DH=a.h\n\r.x"}, exact, "a.h"},
		{"return-then-newline", files, xs, []string{"-DH=a.h\r\n.x"}, exact, "a.h"},
		{"return", files, xs, []string{"-DH=a.h\r.x"}, refused, "a.h"},
		{"separate", files, xs, []string{"-D", "H=a.h\n.x"}, exact, "a.h"},
		{"tab", files, xs, []string{"-DH=a.h\t.x"}, exact, "a.h .x"},
		{"vertical-tab", files, xs, []string{"-DH=a.h\v.x"}, exact, "a.h .x"},
		{"form-feed", files, xs, []string{"-DH=a.h\f.x"}, exact, "a.h .x"},
		{"soh", files, xs, []string{"-DH=a.h\x01.x"}, exact, "a.h\x01.x"},
		{"del", files, xs, []string{"-DH=a.h\x7f.x"}, exact, "a.h\x7f.x"},
		// clang defines Y empty and opens ".h"; NVRTC 13 defines Y as 1.
		{"joined-equals", map[string]string{".h": "//empty\n"}, "#define S(x) #x\n#define X(x) S(x)\n#include X(Y.h)\n",
			[]string{"-D=Y"}, refused, ".h"},
		{"separate-equals", map[string]string{".h": "//empty\n"}, "#define S(x) #x\n#define X(x) S(x)\n#include X(Y.h)\n",
			[]string{"-D", "=Y"}, exact, ".h"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkArgv(t, clang, tc) })
	}
}

// TestOptionLineBreakAsClang: a line break outside a -D body starts a
// line of clang's predefines, which may be a directive of its own: each
// of these makes clang-15 read e.h, and the scan must refuse them.
func TestOptionLineBreakAsClang(t *testing.T) {
	clang := requireClang(t)
	files := map[string]string{"e.h": "int e;\n", "x.h": "int x;\n"}
	const src = "int k;\n"
	for _, tc := range []argvCase{
		{"define-without-body", files, src, []string{"-DA\n#include \"e.h\""}, refused, "e.h"},
		{"define-name", files, src, []string{"-DA\n#include \"e.h\"\n=1"}, refused, "e.h"},
		{"undef", files, src, []string{"-UA\n#include \"e.h\""}, refused, "e.h"},
		{"undef-return", files, src, []string{"-UA\r#include \"e.h\""}, refused, "e.h"},
		{"include", files, src, []string{"-include", "x.h\"\n#include \"e.h"}, refused, "e.h"},
		{"body", files, src, []string{"-DA=1\n#include \"e.h\""}, exact, ""},
	} {
		t.Run(tc.name, func(t *testing.T) { checkArgv(t, clang, tc) })
	}
}

// TestSysrootEqualsAsClang: clang-15 searches -I=DIR under the sysroot
// where the options name one (the last -isysroot, else the last non-empty
// --sysroot), and -isystem=DIR as the directory "=DIR" with or without
// one.
func TestSysrootEqualsAsClang(t *testing.T) {
	clang := requireClang(t)
	files := map[string]string{"=inc/q.h": "//eq\n", "inc/q.h": "//plain\n", "sr/inc/q.h": "//sr\n", "sr2/inc/q.h": "//sr2\n"}
	const src = "#include <q.h>\n"
	for _, tc := range []argvCase{
		{"isysroot", files, src, []string{"-I=inc", "-isysroot", "ROOT/sr"}, exact, "sr/inc/q.h"},
		{"isysroot-joined-slash", files, src, []string{"-isysrootROOT/sr/", "-I=/inc"}, exact, "sr/inc/q.h"},
		{"sysroot", files, src, []string{"--sysroot=ROOT/sr", "-I", "=inc"}, exact, "sr/inc/q.h"},
		{"sysroot-separate", files, src, []string{"--sysroot", "ROOT/sr", "-I=inc"}, exact, "sr/inc/q.h"},
		{"isysroot-over-sysroot", files, src, []string{"-isysroot", "ROOT/sr2", "--sysroot=ROOT/sr", "-I=inc"}, exact, "sr2/inc/q.h"},
		{"last-isysroot", files, src, []string{"-isysroot", "ROOT/sr", "-I=inc", "-isysroot", "ROOT/sr2"}, exact, "sr2/inc/q.h"},
		{"empty-sysroot", files, src, []string{"--sysroot=", "-I", "=inc"}, exact, "=inc/q.h"},
		{"isystem-under-sysroot", files, src, []string{"-isysroot", "ROOT/sr", "-isystem=inc"}, exact, "=inc/q.h"},
		{"no-sysroot", files, src, []string{"-I=inc"}, refused, "=inc/q.h"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkArgv(t, clang, tc) })
	}
}
