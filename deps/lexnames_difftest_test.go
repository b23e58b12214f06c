package deps_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/keyparts"
)

// Regression tests for three ways the scan keyed fewer files than
// clang-15 reads, each compared against clang through the differential
// harness (compare): a NUL byte, which clang lexes as a blank, hid a
// directive; a computed header name was spelled without the blanks clang
// gives it (an expansion to nothing passes its blank on, and a '>' built
// from tokens keeps its own); and an include's operand, which clang lexes
// as a file name until the expansion gives it a first token, so that a
// string literal there is stringized unescaped and a '<' begins one
// header name, was lexed as ordinary tokens.

// lexCase is one program: its text, the headers known beforehand that it
// reads (clang must read each, or the case shows nothing) and that it
// only tests for, and whether the scan is to refuse it rather than key it
// exactly.
type lexCase struct {
	name   string
	src    string
	reads  []string
	makes  []string
	refuse bool
}

// TestNULAsClang: clang lexes a NUL byte outside literals as a blank (and
// warns), so "\0#include", "#\0include" and "#include\0" are includes; in
// a literal or a header name it keeps the byte and opens the file named
// by what comes before it, which the scan does not model.
func TestNULAsClang(t *testing.T) {
	clang := requireClang(t)
	for _, tc := range []lexCase{
		{name: "before the hash", src: "\x00#include \"n.h\"\n", reads: []string{"n.h"}},
		{name: "blanks and NULs before the hash", src: " \x00\t\x00 #include \"n.h\"\n", reads: []string{"n.h"}},
		{name: "between the hash and the name", src: "#\x00include \"n.h\"\n", reads: []string{"n.h"}},
		{name: "after the name", src: "#include\x00\"n.h\"\n", reads: []string{"n.h"}},
		{name: "before an angled name", src: "#include\x00<n.h>\n", reads: []string{"n.h"}},
		{name: "digraph", src: "\x00%:\x00include \"n.h\"\n", reads: []string{"n.h"}},
		{name: "in a define", src: "#\x00define\x00H\x00\"n.h\"\n#include H\n", reads: []string{"n.h"}},
		{name: "before the parenthesis of a define", src: "#define S(x) #x\n#define X(x) S(x)\n#define H\x00(a) b\n#include X(H(c).h)\n"},
		{name: "in a computed name", src: "#define S(x) #x\n#define X(x) S(x)\n#include X(n\x00.h)\n", reads: []string{"n .h"}},
		{name: "in a body built into <...>", src: "#define H <n\x00.h>\n#include H\n", reads: []string{"n .h"}},
		{name: "in a comment", src: "/* \x00 */#include \"n.h\"\n// \x00\n#include \"m.h\"\n", reads: []string{"n.h", "m.h"}},
		{name: "in a string of code", src: "char *s = \"\x00\";\n#include \"n.h\"\n", reads: []string{"n.h"}},
		// clang opens "n": the name up to the NUL.
		{name: "in a quoted name", src: "#include \"n\x00.h\"\n#include \"m.h\"\n", reads: []string{"m.h"}, makes: []string{"n"}, refuse: true},
		{name: "in an angled name", src: "#include <n\x00.h>\n#include \"m.h\"\n", reads: []string{"m.h"}, makes: []string{"n"}, refuse: true},
		{name: "in a string of a define", src: "#define H \"n\x00.h\"\n#include H\n#include \"m.h\"\n", reads: []string{"m.h"}, makes: []string{"n"}, refuse: true},
	} {
		t.Run(tc.name, func(t *testing.T) { checkLexCase(t, clang, tc) })
	}
}

// TestComputedNameSpacingAsClang: the blanks clang puts in a header name
// built by macro expansion. A macro or an argument that expands to
// nothing passes its blank on to the token after it (a name stringized
// from "a E.h" with E empty is "a .h"), and in a <...> name built from
// tokens every token after a blank is spelled after a space, the '>'
// included (<a.h > opens "a.h "). Each program's names are as clang opens
// them (its "file not found" errors), then compared with the files there.
func TestComputedNameSpacingAsClang(t *testing.T) {
	clang := requireClang(t)
	const pre = "#define S(x) #x\n#define X(x) S(x)\n#define E\n#define EE E\n#define F(x) x\n#define G()\n#define N(x)\n#define CAT(a,b) a##b\n#define P .h\n"
	for i, src := range []string{
		// Stringized (the reviewer's first cases, then variants).
		"#include X(a E.h)",
		"#include X(a G().h)",
		"#include X(a CAT(,).h)",
		"#include X(a CAT(E,).h)",
		"#include X(a.E.h)",
		"#include X(a. E.h)",
		"#include X(a EE.h)",
		"#include X(a N(x).h)",
		"#include X(a F().h)",
		"#include X(a F(E).h)",
		"#include X(a.F( h))",
		"#include X(a F(.h))",
		"#include X(a E E P)",
		"#include X(E a.h)",
		"#include X(a/**/.h)",
		"#include X(a.F(E)h)",
		"#define B a E\n#include X(B.h)",
		"#define B .E\n#include X(a B.h)",
		"#define B(x) E x\n#include X(a.B(b).h)",
		"#define H(x) X(a x.h)\n#include H()",
		"#define H(x) X(x)\n#include H( a  .h )",
		"#define I(x) x X(a x.h)\n#include I()",
		// Built from tokens between < and >.
		"#define H <a.h >\n#include H",
		"#define H <a E.h>\n#include H",
		"#define H <a.h E>\n#include H",
		"#define H < E a.h>\n#include H",
		"#define H <a.h G()>\n#include H",
		"#define H <a.h CAT(,)>\n#include H",
		"#define B a.h E\n#define H <B>\n#include H",
		"#define H(x, y) <x y>\n#include H(a,)",
		"#define H(x, y) <x y>\n#include H(,a.h)",
		"#define H(x, y) <x y.h>\n#include H(a,E)",
		"#define H(x) <x.h>\n#include H(a E)",
		"#define H(x) <x .h>\n#include H(a)",
		"#define H(x) < x>\n#include H(E a.h)",
		"#define H(x) <a #x.h>\n#include H()",
		"#define H(x, y) <a x#y.h>\n#include H(,b)",
		"#define L <\n#include L a E.h>",
		"#define L <\n#define R E>\n#include L a.h R",
		"#define L <\n#define R(x) x>\n#include L a.h R( )",
		"#define Q \"a.h\"\n#define H <a Q>\n#include H",
		// Pasted with placemarkers.
		"#define H(x, y) <x ## y.h>\n#include H(a,)",
		"#define H(x, y) <x y ## .h>\n#include H(a,)",
		"#define H(x, y) <a x##y.h>\n#include H(,)",
		"#define H(x, y) <a.x ##y.h>\n#include H(,)",
		"#define H(x, y) <a x##y>\n#include H(,)",
		"#define H(x, y) <a.x ## b>\n#include H(,)",
		"#define H(x, y) <a. x ## b>\n#include H(,)",
		"#define H(x, y) <a.x ## y>\n#include H(,b)",
		"#define H(x, y) <a. x ## y>\n#include H(, b)",
		"#define H(x, y) < x##y.h>\n#include H(,a)",
		"#define H(...) <a __VA_ARGS__.h>\n#include H()",
		// An empty argument that ends an expansion passes its blank on
		// past it.
		"#define B(x) a x\n#include X(B().h)",
		"#define B(x, y) a x##y\n#include X(B(,).h)",
		"#define B(x) E x\n#include X(a.B().h)",
		"#define B(x) a x\n#define C(y) <B(y)>\n#include C()",
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkLexCase(t, clang, lexCase{name: src, src: pre + src + "\n"})
		})
	}
}

// TestCommaPasteAsClang: GNU's ", ## __VA_ARGS__" removes the comma
// where the variable arguments are left out (H(b) for H(x, ...)), and
// keeps it where they are given, even empty. For H() of H(...) clang
// removes it or not as it lexes C++ or GNU C, or strict C (OpenCL C),
// which the scan cannot tell: it refuses.
func TestCommaPasteAsClang(t *testing.T) {
	clang := requireClang(t)
	for i, tc := range []lexCase{
		{src: "#define H(x, ...) <a.x,##__VA_ARGS__.h>\n#include H(b)"},
		{src: "#define H(x, ...) <a.x,##__VA_ARGS__.h>\n#include H()"},
		{src: "#define H(x, ...) <a.x,##__VA_ARGS__.h>\n#include H(b,)"},
		{src: "#define H(x, ...) <a.x,##__VA_ARGS__.h>\n#include H(b,c)"},
		{src: "#define H(x, ...) <a.x ,##__VA_ARGS__ .h>\n#include H(b)"},
		{src: "#define H(x, ...) <a.x##,##__VA_ARGS__.h>\n#include H(b)"},
		{src: "#define H(x, y...) <a.x,##y.h>\n#include H(b)"},
		{src: "#define H(...) <a,##__VA_ARGS__.h>\n#include H()", refuse: true},
	} {
		tc.name = tc.src
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkLexCase(t, clang, tc) })
	}
}

// TestIncludeOperandLexedAsFileName: clang lexes an include's operand as
// a file name until the expansion gives it a first token: a string
// literal there is a header name, which # spells unescaped (X(a"b".h)
// opens a"b".h, where a string a macro brings is escaped), and a '<'
// begins one header name to the next '>', in which nothing expands and
// "//" begins no comment (E <a  b.h> opens "a  b.h" with E empty). Once
// the first token is out, the rest is lexed the usual way.
func TestIncludeOperandLexedAsFileName(t *testing.T) {
	clang := requireClang(t)
	const pre = "#define S(x) #x\n#define X(x) S(x)\n#define E\n#define F(x) x\n#define a b\n"
	for i, tc := range []lexCase{
		{src: "#include X(a\"b\".h)"},
		{src: "#include X(\"a\\\\b\")"},
		{src: "#include X(\"a\\n.h\")"},
		{src: "#include X(\"a\\\"b\")"},
		{src: "#include X('\"'.h)"},
		{src: "#include X(L\"b\")"},
		{src: "#define Q \"b\"\n#include X(a Q.h)"},
		{src: "#define Q \"b\"\n#define Y(x) X(x Q)\n#include Y(a)"},
		{src: "#define Q \"a\\\"b.h\"\n#include Q"},
		{src: "#define Y X\n#include Y(a\"b\".h)"},
		// An unterminated literal is a token of no kind: # escapes
		// nothing in it.
		{src: "#define Q \"abc\n#include X(Q)"},
		{src: "#define Q 'abc\n#include X(Q)"},
		{src: "#define Y(x) X(x)\n#include Y(\"q\")"},
		{src: "#define Z(x) < x \"q\">\n#include Z(\"p\")"},
		{src: "#define Z(x) x S(\"q\")>\n#include Z(<) z"},
		{src: "#include X(<a>.h)"},
		{src: "#include X(<a  b>.h)"},
		{src: "#include X(<a,b>.h)"},
		{src: "#include X(<a)b>.h)"},
		{src: "#include E <a  b.h>"},
		{src: "#include E <a.h>"},
		{src: "#include E \"a\\\"b.h\""},
		{src: "#include F(<a.h>)"},
		{src: "#include F(<a\tb.h>)"},
		{src: "#include F(E) <a  b.h>"},
		{src: "#include X(<a)"},
		{src: "#define L <\n#include L a.h>"},
		{src: "#define L <\n#include L a  b.h>"},
		{src: "#define L <\n#include L <a.h> >"},
		{src: "#define L(x) <\n#include L(\"q\") a.h>"},
		{src: "#define G >\n#include E <a G"},
		{src: "#include E <<a.h>"},
		{src: "#define U(x) x\n#define V U(\n#include V <a  b.h>)"},
		{src: "#define M(x) x\n#include M(F)(<a  b.h>)"},
		{src: "#define M(x) x(<a  b.h>)\n#include M(F)"},
		{src: "#define U(x, y) S(y)\n#include U(<x,y>,z)"},
		// What the scan does not model: refused.
		{src: "#include E <a//b.h>", refuse: true},
		{src: "#include X(<a//b>.h)", refuse: true},
		{src: "#include F(E) <a/*b.h>\n#include \"m.h\"\n/* */", reads: []string{"m.h"}, refuse: true},
		{src: "#include X(<a\"b>.h)", refuse: true},
		{src: "#include X(u8\"b\")", refuse: true},
		{src: "#if __has_include(E <a  b.h>)\n#include \"m.h\"\n#endif", reads: []string{"m.h"}, makes: []string{"a  b.h"}, refuse: true},
		{src: "#if __has_include(X(a\"b\".h))\n#include \"m.h\"\n#endif", reads: []string{"m.h"}, makes: []string{"b\"b\".h"}, refuse: true},
	} {
		tc.name, tc.src = tc.src, pre+tc.src+"\n"
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkLexCase(t, clang, tc) })
	}
}

// checkLexCase compares clang with the scan on tc, built by PoCL (OpenCL
// C) and as C++: the headers clang opens are first made to exist, each
// named as clang reports it missing, each holding a marker of its own.
// PoCL's build is judged by compare, or where a name cannot be read back
// from clang's make rule (a backslash, a tab, '#' or '$' in it) by the
// markers of the files clang's output holds, as the C++ build is.
func checkLexCase(t *testing.T, clang string, tc lexCase) {
	t.Helper()
	t.Run("pocl", func(t *testing.T) {
		dir := t.TempDir()
		root := filepath.Join(dir, "root")
		main := filepath.Join(dir, "pocl-cache", "tempfile.cl")
		preprocess := append(append([]string{clang}, deps.PoCLFrontEndMust("")...), "-E", "-Wno-everything", main)
		files, out := makeLexCase(t, root, main, tc, preprocess)
		if !slices.ContainsFunc(slices.Collect(maps.Keys(files)), unlisted) {
			run := clangRun{clang: clang, wd: root, main: main}
			run.strace, _ = exec.LookPath("strace")
			o := compare(deps.NewScanner(nil), run, []byte(tc.src), "", root, dir)
			judgeLexCase(t, tc, files, verdictNames[o.v], o.v == exact || o.v == widened, o.v == refused, fmt.Sprint(o.missed, " ", o.detail))
			return
		}
		in, err := keyparts.OpenCLScan([]byte(tc.src), "", keyparts.PoCL)
		if err != nil {
			t.Fatal(err)
		}
		in.WorkDir, in.MainDir = root, filepath.Dir(main)
		byMarkers(t, tc, files, out, root, in)
	})
	t.Run("c++", func(t *testing.T) {
		root := t.TempDir()
		main := filepath.Join(root, "m.cc")
		preprocess := []string{clang, "-x", "c++", "-std=c++17", "-nostdinc", "-I.", "-Wno-everything", "-E", main}
		files, out := makeLexCase(t, root, main, tc, preprocess)
		in := deps.Input{Source: []byte(tc.src), Path: main, WorkDir: root, Args: []string{"-I."}, CompleteSearchPath: true, Trigraphs: deps.TrigraphsOff}
		byMarkers(t, tc, files, out, root, in)
	})
}

// unlisted reports whether clang's make rule cannot name the file name
// so that makePrereqs reads it back: it writes a backslash as a slash,
// splits at a tab, and escapes '#' and '$'.
func unlisted(name string) bool { return strings.ContainsAny(name, "\\\t#$") }

// makeLexCase writes tc's text to main and its headers under root, then
// runs preprocess (clang -E) there and creates each header it reports
// missing, until it reports none. It returns the headers, each to its
// marker, and clang's last output; it fails the test where clang does
// not read a header tc says it reads.
func makeLexCase(t *testing.T, root, main string, tc lexCase, preprocess []string) (files map[string]string, out string) {
	t.Helper()
	for _, d := range []string{root, filepath.Dir(main)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(main, []byte(tc.src), 0o644); err != nil {
		t.Fatal(err)
	}
	files = map[string]string{}
	add := func(name string) {
		if _, ok := files[name]; ok {
			t.Fatalf("%q: clang still misses %q once made", tc.name, name)
		}
		files[name] = fmt.Sprintf("int marker_%d;", len(files))
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[name]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range append(tc.reads, tc.makes...) {
		add(f)
	}
	for {
		cmd := exec.Command(preprocess[0], preprocess[1:]...)
		cmd.Dir = root
		b, _ := cmd.CombinedOutput()
		m := missingFile.FindSubmatch(b)
		if m == nil {
			out = string(b)
			break
		}
		name := string(m[1])
		if filepath.IsAbs(name) || slices.Contains(strings.Split(name, "/"), "..") || strings.Contains(name, "<U+0000>") {
			t.Fatalf("%q: clang opens %q, which the test cannot make", tc.name, name)
		}
		add(name)
	}
	for _, f := range tc.reads {
		if !strings.Contains(out, files[f]) {
			t.Fatalf("%q: clang does not read %s: the case shows nothing", tc.name, f)
		}
	}
	return files, out
}

// missingFile matches clang's error for an include it cannot find.
var missingFile = regexp.MustCompile(`fatal error: '(.*)' file not found`)

// byMarkers scans in and judges as compare does: every header of files
// whose marker clang's output out holds must be keyed (as a file, by
// inode), or the scan must refuse the source.
func byMarkers(t *testing.T, tc lexCase, files map[string]string, out, root string, in deps.Input) {
	t.Helper()
	_, trace, err := deps.NewScanner(nil).Scan(context.Background(), in)
	switch {
	case errors.Is(err, deps.ErrUncacheable):
		judgeLexCase(t, tc, files, "refused", false, true, err.Error())
		return
	case err != nil:
		t.Fatalf("%q: %v", tc.name, err)
	}
	keyed := map[fileID]bool{}
	for _, d := range trace {
		if id, ok := idOf(d.Path); ok && d.Rule != deps.RuleAbsent {
			keyed[id] = true
		}
	}
	var missed []string
	for name, marker := range files {
		if id, _ := idOf(filepath.Join(root, name)); strings.Contains(out, marker) && !keyed[id] {
			missed = append(missed, name)
		}
	}
	v := "exact"
	if len(missed) > 0 {
		v = "FAILURES"
	}
	judgeLexCase(t, tc, files, v, len(missed) == 0, false, fmt.Sprintf("missed %q, keyed %v", missed, trace))
}

// judgeLexCase fails the test where the scan's verdict is not what tc
// expects: exact (or widened), or refused where tc says so. Where no
// header is to be read, the case shows nothing.
func judgeLexCase(t *testing.T, tc lexCase, files map[string]string, verdict string, keyed, refusedIt bool, detail string) {
	t.Helper()
	if len(files) == 0 {
		t.Fatalf("%q: clang opens no header: the case shows nothing", tc.name)
	}
	names := slices.Sorted(maps.Keys(files))
	switch {
	case tc.refuse && !refusedIt && !keyed:
		t.Errorf("%q (headers %q): the scan neither refused it nor keyed it exactly: %s %s", tc.name, names, verdict, detail)
	case !tc.refuse && !keyed:
		t.Errorf("%q (headers %q): %s %s", tc.name, names, verdict, detail)
	}
}
