package deps_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// TestDirectiveLexingAsClang: clang lexes an include's header name as one
// token where it obeys the include ("//" and "/*" in <...> begin no
// comment, and a backslash escapes the closing '>' or quote), and reads
// the text of #warning raw to the line's end (a "/*" there begins no
// comment). A scanner that lexed them as ordinary tokens opened another
// name than the compiler, or took a comment to run on over the includes
// that follow, and missed files clang reads. Each case is preprocessed
// by clang-15 as PoCL runs it; every header holds a marker, and each
// whose marker clang's output holds must be keyed, or the source
// refused.
func TestDirectiveLexingAsClang(t *testing.T) {
	clang := requireClang(t)
	for _, tc := range []struct {
		name  string
		files []string // headers, each under the working directory
		src   string
	}{
		{"comment in #warning", []string{"hidden.h"}, "#warning see /*\n#include \"hidden.h\"\n/* */\n"},
		{"line comment in an angled name", []string{"inc/b.h"}, "#include <inc//b.h>\n"},
		{"block comment in an angled name", []string{"inc/*x.h", "hidden.h"}, "#include <inc/*x.h>\n#include \"hidden.h\"\n/* */\n"},
		{"escaped quote in a quoted name", []string{`a\" `}, "#include \"a\\\" \"\n"},
		{"escaped '>' in an angled name", []string{`a\>b.h`}, "#include <a\\>b.h>\n"},
		{"quote in an angled name", []string{`q"x.h`, "hidden.h"}, "#include <q\"x.h> /*\n#include \"hidden.h\"\n/* */\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			for i, f := range tc.files {
				p := filepath.Join(wd, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(fmt.Sprintf("int marker%d;\n", i)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			src := tc.src + "kernel void k(void) {}\n"
			out, err := clangAsPoCL(t, clang, wd, src)
			if err != nil {
				t.Fatalf("clang -E: %v", err)
			}
			trace, uncacheable := scanAsPoCL(t, wd, src)
			if uncacheable {
				return
			}
			// By file, not path: the key names inc//b.h as opened.
			var keyed []os.FileInfo
			for _, d := range trace {
				if fi, err := os.Stat(d.Path); err == nil && d.Rule != deps.RuleAbsent {
					keyed = append(keyed, fi)
				}
			}
			read := 0
			for i, f := range tc.files {
				if !strings.Contains(string(out), fmt.Sprintf("int marker%d;", i)) {
					continue
				}
				read++
				fi, err := os.Stat(filepath.Join(wd, f))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(keyed, func(k os.FileInfo) bool { return os.SameFile(k, fi) }) {
					t.Errorf("clang reads %s; the key holds %v", f, trace)
				}
			}
			if read == 0 {
				t.Fatalf("clang read none of %q: the case shows nothing", tc.files)
			}
		})
	}
}

// TestHasIncludeNameAsClang: the operand of a __has_include written in a
// condition is lexed as an include's header name, its bytes as written
// ("a  b.h" keeps both blanks; "//" begins no comment; a backslash escapes
// '>'). clang-15 compiles another branch once the file exists, so the
// key must change when it is created.
func TestHasIncludeNameAsClang(t *testing.T) {
	clang := requireClang(t)
	for _, tc := range []struct{ name, file, operand string }{
		{"two blanks", "a  b.h", "<a  b.h>"},
		{"line comment", "inc/b.h", "<inc//b.h>"},
		{"escaped '>'", `a\>b.h`, `<a\>b.h>`},
		{"escaped quote", `q\" `, `"q\" "`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			if err := os.MkdirAll(filepath.Join(wd, "inc"), 0o755); err != nil {
				t.Fatal(err)
			}
			src := "#if __has_include(" + tc.operand + ")\nint present;\n#endif\nkernel void k(void) {}\n"
			// clang's verdict and the key, without the file and with it.
			var present [2]bool
			var keys [2]string
			for i := range 2 {
				if i == 1 {
					if err := os.WriteFile(filepath.Join(wd, tc.file), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				out, err := clangAsPoCL(t, clang, wd, src)
				if err != nil {
					t.Fatalf("clang -E: %v", err)
				}
				present[i] = strings.Contains(string(out), "int present;")
				headers, _, uncacheable := keyAsPoCL(t, wd, src)
				if uncacheable {
					return
				}
				keys[i] = fmt.Sprint(headers)
			}
			if present != [2]bool{false, true} {
				t.Fatalf("clang compiled the branch %v (without the file, with it): the case shows nothing", present)
			}
			if keys[0] == keys[1] {
				t.Errorf("creating %s changed what clang compiles, not the key %s", tc.file, keys[0])
			}
		})
	}
}

// TestComputedIncludeSpacingAsClang: a computed include's <...> name is
// the spellings of its tokens, with a blank wherever one had white space
// before it, the first included (clang's ConcatenateIncludeName): with
// files " a.h" and "a.h" both present, the key must hold the one clang
// reads. The first token's blank was dropped, so #define H < a.h> keyed
// a.h where clang reads " a.h".
func TestComputedIncludeSpacingAsClang(t *testing.T) {
	clang := requireClang(t)
	wd := t.TempDir()
	for name, text := range map[string]string{" a.h": "int spaced;\n", "a.h": "int plain;\n"} {
		if err := os.WriteFile(filepath.Join(wd, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, src := range []string{
		"#define H < a.h>\n#include H",
		"#define M(x) < x.h>\n#include M(a)",
		"#define M(x) <x.h>\n#include M( a)",
		"#define M(x) <x>\n#include M(/**/a.h)",
		"#define E\n#define H <E a.h>\n#include H",
		"#define E\n#define H <E/**/a.h>\n#include H",
		"#define E()\n#define H <E()a.h>\n#include H",
		"#define L <\n#include L a.h>",
		"#define H(x) x\n#include H(< a.h>)",
		"#define H(x) x\n#include H(<a.h>)",
		"#define H < a\n#include H.h>",
		"#define C(x,y) x##y\n#define H < C(,a).h>\n#include H",
		"#define H(x) < x.h>\n#define G(y) H(y)\n#include G(a)",
		"#define H(x) <x.h>\n#define G(y) H( y)\n#include G(a)",
		"#define A a\n#define H < A.h>\n#include H",
		"#define V(...) <__VA_ARGS__.h>\n#include V( a)",
	} {
		src := src + "\nkernel void k(void) {}\n"
		out, err := clangAsPoCL(t, clang, wd, src)
		if err != nil {
			t.Fatalf("%q: clang -E: %v", src, err)
		}
		want := "a.h"
		if strings.Contains(string(out), "int spaced;") {
			want = " a.h"
		}
		headers, _, uncacheable := keyAsPoCL(t, wd, src)
		if uncacheable {
			continue
		}
		if !slices.ContainsFunc(headers, func(h kcache.Header) bool { return h.Name == want }) {
			t.Errorf("%q: clang reads %q; the key holds %v", src, want, headers)
		}
	}
}

// TestCPlusPlusLexingAsClang: C++ (CUDA, C++ for OpenCL) lexes a raw
// string literal to its closing delimiter, across lines, and a digit
// separator (1'0) as part of a number; a scanner that lexed the text as C
// took a "/*" inside the one, or after the other, to begin a comment that
// hid the includes that follow. Unless the input says the compiler lexes
// C, every header clang-15 reads as C++ must be keyed, or the source
// refused.
func TestCPlusPlusLexingAsClang(t *testing.T) {
	clang := requireClang(t)
	for _, tc := range []struct{ name, src string }{
		{"raw string", "const char *s = R\"x(\n/*)x\";\n#include \"hidden.h\"\n/* */\n"},
		{"raw string on one line", "const char *s = R\"(/*)\";\n#include \"hidden.h\"\n/* */\n"},
		{"prefixed raw string", "const char *s = u8R\"--(\"/*)--\";\n#include \"hidden.h\"\n/* */\n"},
		{"digit separator", "int a = 1'0, b = '/*';\n#include \"hidden.h\"\n/* */\n"},
		{"hexadecimal separator", "int a = 0xF'F, b = '//';\n#include \"hidden.h\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			if err := os.WriteFile(filepath.Join(wd, "hidden.h"), []byte("int marker0;\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			main := filepath.Join(wd, "k.cu")
			if err := os.WriteFile(main, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(clang, "-x", "c++", "-std=c++17", "-E", "-Wno-everything", main)
			cmd.Dir = wd
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("clang -E: %v", err)
			}
			if !strings.Contains(string(out), "int marker0;") {
				t.Fatalf("clang does not read hidden.h: the case shows nothing")
			}
			in := deps.Input{Source: []byte(tc.src), Path: main, WorkDir: wd, CompleteSearchPath: true, Trigraphs: deps.TrigraphsOff}
			_, trace, err := deps.NewScanner(nil).Scan(context.Background(), in)
			if errors.Is(err, deps.ErrUncacheable) {
				return
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(trace, func(d deps.Dependency) bool { return d.Rule == deps.RuleInclude && d.Name == "hidden.h" }) {
				t.Errorf("clang reads hidden.h; the key holds %v", trace)
			}
		})
	}
}

// TestUniversalCharacterNamesAsClang: clang reads a universal character
// name in an identifier as the character it names, so caf\u00e9 and café
// are one macro; the scan took them for two and keyed nothing of the
// include. Every header clang-15 reads must be keyed, or the source
// refused.
func TestUniversalCharacterNamesAsClang(t *testing.T) {
	clang := requireClang(t)
	for _, src := range []string{
		"#define caf\\u00e9 \"x.h\"\n#include caf\xc3\xa9\n",
		"#define caf\xc3\xa9 \"x.h\"\n#include caf\\U000000e9\n",
		"#define H caf\\u00e9\n#define caf\xc3\xa9 \"x.h\"\n#include H\n",
	} {
		wd := t.TempDir()
		if err := os.WriteFile(filepath.Join(wd, "x.h"), []byte("int marker0;\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		src := src + "kernel void k(void) {}\n"
		out, err := clangAsPoCL(t, clang, wd, src)
		if err != nil || !strings.Contains(string(out), "int marker0;") {
			t.Fatalf("%q: clang does not read x.h (%v): the case shows nothing", src, err)
		}
		trace, uncacheable := scanAsPoCL(t, wd, src)
		if uncacheable {
			continue
		}
		if !slices.ContainsFunc(trace, func(d deps.Dependency) bool { return d.Rule != deps.RuleAbsent && d.Name == "x.h" }) {
			t.Errorf("%q: clang reads x.h; the key holds %v", src, trace)
		}
	}
}
