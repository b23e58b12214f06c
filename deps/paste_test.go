package deps

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSegmentable pins the rule a pasted name is held to: two or more of
// its proper substrings, each spelled.
func TestSegmentable(t *testing.T) {
	words := func(ws ...string) func(string) bool { return func(w string) bool { return slices.Contains(ws, w) } }
	cases := []struct {
		name    string
		spelled func(string) bool
		want    bool
	}{
		{"__TIMESTAMP__", words("__TIMES", "TAMP__"), true},
		{"__TIMESTAMP__", words("__", "TIME", "STAMP", "__"), true},
		{"__TIMESTAMP__", words("__TIMESTAMP__"), false}, // whole: the text search's
		{"__TIMESTAMP__", words("__TIMES"), false},
		{"__TIMESTAMP__", words("_", "T", "I", "M", "E", "S", "A", "P"), true},
		{"__DATE__", words("_", "D", "A", "T"), false}, // no E
		{"HASINC", words("HAS", "INC"), true},
	}
	for _, c := range cases {
		if got := segmentable(c.name, c.spelled); got != c.want {
			t.Errorf("segmentable(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestTargetWords checks which words of a text can enter a paste: not
// those of comments or literals, but those beside them, and every word
// where a raw string literal could hide a comment's markers.
func TestTargetWords(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"CAT(__TIMES, TAMP__)", []string{"__TIMES", "TAMP__"}},
		{"/* TIME */ x // DATE\n", nil},
		{`"TIME" 'E'`, nil},
		{`"http://x" TIME`, []string{"TIME"}},                // no comment in a literal
		{"1'000 + TIME; 'a'", []string{"TIME"}},              // a digit separator starts no literal
		{"R\"(/* )\" TIME /* */", []string{"TIME"}},          // a raw string: nothing skipped
		{"x = __USER_LABEL_PREFIX__;", []string{"_"}},        // "_" on some targets
		{"\"unterminated\nTIME", []string{"TIME"}},           // a literal ends on its line
		{"FILENAME FILE_ _NAME", []string{"FILE_", "_NAME"}}, // whole words only
		// A definition's parameters are no tokens: its list, and their
		// uses in its body, are left out; its other words are not.
		{"#define G(D, A) D ## A E\n", []string{"E"}},
		{" # define G( D , A...) CAT(D, A)\nD\n", []string{"D"}},
		{"#define G(...) __VA_ARGS__ ## D\n", []string{"D"}},
		{"#define G (D) D\n", []string{"D"}},                // object-like: (D) is its body
		{"#define G(D) /*\n*/ D\nE\n", []string{"E"}},       // the comment continues the line
		{"#define G(/* */D) D\n", []string{"D"}},            // not read whole: nothing left out
		{"x #define G(D) D\n", []string{"D"}},               // no directive
		{"#define G(D) D\n#define G(x) D\n", []string{"D"}}, // another macro's parameter
		// clang reads the rest of the line of an unterminated literal as
		// part of it: no comment begins there, and where one could for a
		// compiler that lexes otherwise, parameters are no longer left out.
		{"'x /*\nTIME /* DATE */", []string{"TIME"}},
		{"\"x /*\n#define G(D) D\n", []string{"D"}},
		{"\"x\n#define G(D) D\n", nil},
	}
	for _, c := range cases {
		got := targetWords([]byte(c.text), false, nil).all
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("targetWords(%q) = %q, want %q", c.text, got, want)
		}
	}
}

// TestGroupedTargetWords checks which words can be a macro's argument
// where every text is balanced: those within parentheses or on a
// directive's line, not those outside every parenthesis; and which texts
// are balanced.
func TestGroupedTargetWords(t *testing.T) {
	cases := []struct {
		text     string
		grouped  []string
		balanced bool
	}{
		{"template <typename T, typename E> struct s<E::rank>;\n", nil, true},
		{"f(T, g(E)) D\n", []string{"T", "E"}, true},
		{"#if E\n#endif\nD\n#pragma x(A)\n", []string{"E", "A"}, true},
		{"#define LP (\nD\n", nil, true}, // a body's parentheses are its own
		{"%:define LP (\nD\n", nil, true},
		{"\x00#define LP (\nD\n", nil, true}, // a NUL is a blank
		{"/* c */ # define LP (\nD\n", nil, true},
		{"f(\n#include \"x.h\"\n)\n", nil, false},         // a directive within parentheses
		{"f(\n#if 1\nE)\n#endif\n", []string{"E"}, false}, // a block that does not pair up
		{"E ) (\n", nil, false},                           // closes what the text did not open
		{"( E\n", []string{"E"}, false},                   // opens what the text does not close
		{"E ')' \"(\" // (\n/* ( */\n", nil, true},        // literals and comments hold none
		{"#if 0\ndon't (\n#endif\nE\n", nil, false},       // an unterminated literal
		{"R\"x(E)x\"\n", []string{"E"}, false},            // a raw string: nothing skipped
		{"x = __USER_LABEL_PREFIX__;\n", []string{"_"}, true},
		// Each branch of a conditional block pairs up from the depth
		// its #if stands at, whichever the build takes.
		{"f(a,\n#ifdef X\nE\n#else\nD\n#endif\n)\n", []string{"E", "D"}, true},
		{"f(a,\n#if X\nE)\n#else\nD)\n#endif\n", []string{"E", "D"}, false}, // closes below its floor
		{"#if X\nf(\n#else\ng(\n#endif\n)\n", nil, false},                   // leaves open what it opened
		{"#if X\n(E)\n#elif Y\n(D)\n#endif\n", []string{"E", "D"}, true},
		{"#if X\n#endif\n#endif\n", nil, false}, // no #if
		{"#if X\nE\n", nil, false},              // no #endif
		{"f(\n#  include_next <x.h>\n)\n", nil, false},
		{"f(\n#pragma once\n)\n", nil, true}, // only includes are refused within parentheses
		{"#define F(x) (x\nF(\n#include \"x.h\"\n)\n", nil, false},
	}
	for _, c := range cases {
		checkGroupedWords(t, c.text, false, c.grouped, c.balanced)
	}
}

// checkGroupedWords checks targetWords(text, cpp)'s grouped words and
// whether it finds text balanced.
func checkGroupedWords(t *testing.T, text string, cpp bool, grouped []string, balanced bool) {
	t.Helper()
	got := targetWords([]byte(text), cpp, nil)
	have := slices.Clone(got.grouped)
	slices.Sort(have)
	want := slices.Clone(grouped)
	slices.Sort(want)
	if !slices.Equal(have, want) || (got.unbalanced == "") != balanced {
		t.Errorf("targetWords(%q, %v): grouped %q, unbalanced %q; want %q, balanced %v", text, cpp, have, got.unbalanced, want, balanced)
	}
}

// TestUnbalancedBranches checks which texts are not balanced only within
// branches of their conditional blocks (pasteWords.branches, each the
// index of the introducer that opens the branch), which is for the scan
// to weigh, and which are not balanced outside them.
func TestUnbalancedBranches(t *testing.T) {
	cases := []struct {
		text     string
		branches []int
		balanced bool // outside the branches
	}{
		{"f(a,\n#if X\nE)\n#else\nD)\n#endif\n)\n", []int{5, 14}, true},
		{"#ifdef X\n#if Y\n)\n#endif\n#endif\n", []int{9}, true}, // the innermost branch
		{"(\n#ifdef X\n#include \"a.h\"\n#endif\n)\n", []int{2}, true},
		{"#ifdef X\nf(\n#endif\n", []int{0}, true},
		{"#if X\nf(\n#else\ng(\n#endif\n)\n", []int{0, 9}, false}, // and ) closes below every #if
		{"#ifdef X\n)\n#endif\n#endif\n", []int{0}, false},        // no #if
		{"#if X\n(\n", nil, false},                                // no #endif
		{"#ifdef X\nR\"x(\n#endif\n)x\"\n", nil, false},           // read anew (a raw string in C)
	}
	for _, c := range cases {
		// The parse marks the directives that open those branches,
		// where the text is balanced outside them.
		p := parseFile([]byte(c.text), lexMode{tri: TrigraphsOff, onlyC: true})
		got := p.targetWords
		var marked []int
		for _, d := range p.directives {
			if d.unbalanced {
				marked = append(marked, d.at)
			}
		}
		if !slices.Equal(got.branches, c.branches) || (got.unbalanced == "") != c.balanced {
			t.Errorf("%q: branches %v, unbalanced %q; want %v, balanced %v", c.text, got.branches, got.unbalanced, c.branches, c.balanced)
		}
		if want := c.branches; (!c.balanced && marked != nil) || (c.balanced && !slices.Equal(marked, want)) {
			t.Errorf("%q: the parse marks branches at %v", c.text, marked)
		}
	}
	// Without its directives, or with directives that lack a conditional
	// the words meet, or place it elsewhere, a text's branches hold for
	// no scan.
	const text = "#ifdef X\n)\n#endif\n"
	for _, dirs := range [][]directive{nil, {{kind: dDefine}}, {{kind: dIf, at: 1}, {kind: dEndif, at: 11}}} {
		if w := targetWords([]byte(text), false, dirs); w.unbalanced == "" {
			t.Errorf("%q with directives %+v: balanced", text, dirs)
		}
	}
	if w := targetWords([]byte(text), false, []directive{{kind: dIf}, {kind: dEndif, at: 11}}); w.unbalanced != "" {
		t.Errorf("%q with its own directives: %s", text, w.unbalanced)
	}
	// Read with digit separators, the apostrophe begins no literal and
	// the comment hides an #if; read without, it does not: the words were
	// read with two structures of conditional blocks, so no branch holds.
	const apart = "#ifdef X\n)\n#endif\nint n = 1'a/*\n#if 1\n#endif\n*/\n"
	if p := parseFile([]byte(apart), lexMode{tri: TrigraphsOff}); p.targetWords.unbalanced == "" || slices.ContainsFunc(p.directives, func(d directive) bool { return d.unbalanced }) {
		t.Errorf("%q: unbalanced %q, a branch marked: the readings' blocks differ", apart, p.targetWords.unbalanced)
	}
}

// TestUnbalancedBranchTaken scans pieces outside every parenthesis beside
// a branch that is not balanced: where the branch is one no build with
// the key can take (an #ifdef or #if defined() of a name that is
// certainly no macro there), the day stays out of the key; where it may
// be taken, the day is in it.
func TestUnbalancedBranchTaken(t *testing.T) {
	dir := t.TempDir()
	const defs = "#define CAT(a, b) a ## b\n#define XCAT(a, b) CAT(a, b)\n#define LP (\n#define APPLY(f, x) f x\n"
	const use = "const char *d = APPLY(XCAT, LP) __DA, TE__ );\n"
	for name, text := range map[string]string{"def.h": "#define NEVER 1\n", "h.h": "#ifdef NEVER\n" + use + "#endif\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, src string
		verifies  bool
		date      bool
		assumes   string // a name the key must assume the compiler does not predefine
	}{
		{name: "#ifdef of no macro", src: "#ifdef NEVER\n" + use + "#endif\n"},
		{name: "#if defined() of no macro", src: "#if defined(NEVER)\n" + use + "#endif\n"},
		{name: "#if defined of no macro", src: "#if defined NEVER\n" + use + "#endif\n"},
		{name: "nested in it", src: "#ifdef NEVER\n#if 1\n" + use + "#endif\n#endif\n"},
		{name: "defined later", src: "#ifdef NEVER\n" + use + "#endif\n#define NEVER\n"},
		{name: "defined before", src: "#define NEVER\n#ifdef NEVER\n" + use + "#endif\n", date: true},
		{name: "undefined before", src: "#undef NEVER\n#ifdef NEVER\n" + use + "#endif\n", date: true},
		{name: "defined in a header before", src: "#include \"def.h\"\n#ifdef NEVER\n" + use + "#endif\n", date: true},
		{name: "defined in a branch before", src: "#if 0\n#include \"def.h\"\n#endif\n#ifdef NEVER\n" + use + "#endif\n", date: true},
		{name: "after an include found nowhere", src: "#include \"nowhere.h\"\n#ifdef NEVER\n" + use + "#endif\n", date: true},
		{name: "the #else", src: "#ifdef NEVER\n#else\n" + use + "#endif\n", date: true},
		{name: "#if of its value", src: "#if NEVER\n" + use + "#endif\n", date: true},
		{name: "#ifndef", src: "#ifndef NEVER\n" + use + "#endif\n", date: true},
		{name: "a reserved name", src: "#ifdef __NEVER\n" + use + "#endif\n", date: true},
		{name: "a reserved name, verified", src: "#ifdef __NEVER\n" + use + "#endif\n", verifies: true, assumes: "__NEVER"},
		{name: "a header's branch", src: "#include \"h.h\"\n"},
		// The header is followed again where what it consulted changed.
		{name: "a header's branch, then defined", src: "#include \"h.h\"\n#define NEVER\n#include \"h.h\"\n", date: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Source: []byte(defs + c.src), Path: "k.c", WorkDir: dir, Args: []string{"-I" + dir}, VerifiesPredefines: c.verifies}
			trace := scanHoldingDay(t, in, c.date)
			assumed := slices.ContainsFunc(trace, func(d Dependency) bool { return d.Rule == RuleNotPredefined && d.Path == c.assumes })
			if c.assumes != "" && !assumed {
				t.Errorf("the key does not assume %s is not predefined: %v", c.assumes, trace)
			}
		})
	}
}

// TestTargetWordsLexedAsCPlusPlus checks the words of texts that C and
// C++14 lex apart: raw strings and digit separators, read as C++ where
// the compiler lexes it, and in both readings where it may lex either.
func TestTargetWordsLexedAsCPlusPlus(t *testing.T) {
	cases := []struct {
		text     string
		cpp      bool
		grouped  []string
		balanced bool
	}{
		{"R\"x(E) ( \" /*)x\" D\n", true, nil, true},  // the raw string is skipped whole
		{"R\"x(E)x\"\n", false, []string{"E"}, false}, // a compiler of C reads no raw string
		{"R\"x y(E)x y\" D\n", true, []string{"E"}, false},
		{"R\"x(E) never closes\n", true, []string{"E"}, false},
		{"int n = 1'000; f(D)\n", true, []string{"D"}, true},
		// Without C++, '000; f(D)' is a character literal that does not
		// close on its line, outside a directive.
		{"int n = 1'000; f(D)\n", false, []string{"D"}, false},
		{"x = 0x1'ff'E; (D)\n", true, []string{"D"}, true}, // E is the number's
		{"x = 1e+E'D; (A)\n", true, []string{"A"}, true},
		{"x = 0x1p+E'D; (A)\n", true, []string{"A"}, false}, // a p's sign: lexed apart
		{"x = 1'$ (D)\n", true, []string{"D"}, false},       // $ may go on the number or not
		{"x = 1$'E' (D)\n", true, []string{"D"}, false},
	}
	for _, c := range cases {
		checkGroupedWords(t, c.text, c.cpp, c.grouped, c.balanced)
	}
}

// TestDependencyPragmaRefused checks the pragma is found in each form
// clang runs it (checked with clang-15: GCC and clang, blanks and comments
// between, through _Pragma) and not in a mere mention.
func TestDependencyPragmaRefused(t *testing.T) {
	for text, want := range map[string]bool{
		`#pragma GCC dependency "x.h"`:                true,
		`#pragma clang dependency "x.h"`:              true,
		"#pragma GCC /* c */\tdependency \"x.h\"":     true,
		"#pragma GCC /* x /* y */ dependency \"x.h\"": true,
		"#  pragma GCC \\\ndependency \"x.h\"":        true,
		`_Pragma("GCC dependency \"x.h\"")`:           true,
		"// the dependency of a build":                false,
		"#pragma GCC dependencyx":                     false,
		"#pragma once // dependency":                  false,
		"auto capture_as_dependency(D&& dependency);": false,
	} {
		p := parseFile([]byte(text+"\n"), lexMode{tri: TrigraphsOff})
		if got := p.unsure == dependencyUnsure; got != want {
			t.Errorf("%q: refused %v (%q), want %v", text, got, p.unsure, want)
		}
	}
}

// TestPastedNames scans sources that paste a clock, file or file-test
// name from pieces, and the same pieces where no paste can make the name.
func TestPastedNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.h"), []byte("//x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const cat = "#define CAT(a, b) a ## b\n"
	cases := []struct {
		name, src string
		refused   bool
		date      bool
		probes    string // a place the trace must hold
		args      []string
	}{
		{name: "option's file-test macro", src: "#if HI(\"x.h\")\nint y;\n#endif\n", args: []string{"-DHI(f)=__has_include(f)"}, probes: "x.h"},
		{name: "timestamp", src: cat + "const char* t = CAT(__TIMES, TAMP__);\n", refused: true},
		{name: "time in pieces", src: cat + "#define T2 CAT(CAT(__, TI), ME__)\nconst char* t = T2;\n", refused: true},
		{name: "date", src: cat + "const char* t = CAT(__DA, TE__);\n", date: true},
		{name: "literal operand", src: "#define P(x) _cl_ ## x\nconst char* t = P(__TIMES) TAMP__;\n"},
		{name: "pieces in comments", src: cat + "// __TIMES TAMP__\nint x;\n"},
		{name: "has_include", src: cat + "#if CAT(__has_, include)(\"x.h\")\nint y;\n#endif\n", probes: "x.h"},
		{name: "after sizeof'//'", src: cat + "#define XCAT(a, b) CAT(a, b)\nint o = sizeof'//' + XCAT(__TIMES, TAMP__)[0];\n", refused: true},
		{name: "__VA_OPT__ operand", src: "#define CAT(a, b, ...) a ## __VA_OPT__(b)\nconst char* t = CAT(__TIMES, TAMP__, 1);\n", refused: true},
		{name: "number piece", src: "#define HI2(f) __has_include(f)\n" + cat + "#if CAT(HI, 2)(\"x.h\")\nint y;\n#endif\n", probes: "x.h"},
		{name: "predefined piece", src: "#define HL(f) __has_include(f)\n" + cat + "#define XCAT(a, b) CAT(a, b)\n#if XCAT(H, __INT64_C_SUFFIX__)(\"x.h\")\nint y;\n#endif\n", refused: true}, // the compiler's macro: not expanded
		{name: "name learnt from spelled pieces", src: cat + "#define XCAT(a, b) CAT(a, b)\n#define A include\n#define HI(f) __has_include(f)\n#if 1\n#endif\n#define includeinclude(f) HI(f)\n#define J XCAT(A, A)\n#if J(\"x.h\")\nint y;\n#endif\n", probes: "x.h"},
		{name: "after an unterminated literal", src: cat + "#define X(a, b) CAT(a, b)\n#if 0\n\"unterminated /*\n#endif\nconst char *d = X(__DA, TE__);\n/* */\n", date: true},
		{name: "after an unterminated character", src: cat + "#if 0\n'u /*\n#endif\nconst char *d = CAT(__DA, TE__);\n/* */\n", date: true},
		{name: "pieces as parameters", src: cat + "#define G(__DA, TE__) CAT(__DA, TE__)\nconst char *d = G(x, y);\n"},
		{name: "pieces as parameters and arguments", src: cat + "#define G(__DA, TE__) CAT(__DA, TE__)\nconst char *d = G(__DA, TE__);\n", date: true},
		{name: "file-test macro", src: "#define HASINC(f) __has_include(f)\n" + cat + "#if CAT(HAS, INC)(\"x.h\")\nint y;\n#endif\n", probes: "x.h"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Source: []byte(c.src), Path: "k.cl", WorkDir: dir, Args: append([]string{"-I" + dir}, c.args...)}
			_, trace, err := NewScanner(nil).Scan(context.Background(), in)
			if errors.Is(err, ErrUncacheable) != c.refused {
				t.Fatalf("err = %v, want refused %v", err, c.refused)
			}
			if c.refused {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			date := slices.ContainsFunc(trace, func(d Dependency) bool { return d.Name == DateHeader })
			if date != c.date {
				t.Errorf("the key holds the day: %v, want %v", date, c.date)
			}
			if c.probes != "" && !slices.ContainsFunc(trace, func(d Dependency) bool { return strings.HasSuffix(d.Path, c.probes) }) {
				t.Errorf("the trace does not hold %s: %v", c.probes, trace)
			}
		})
	}
}

// TestPastedOutsideParentheses scans pieces spelled outside every
// parenthesis, which no paste takes while every text is balanced, and
// the calls that take them where a text is not (each checked with
// clang-15 -E: the day is in the output).
func TestPastedOutsideParentheses(t *testing.T) {
	dir := t.TempDir()
	const defs = "#define CAT(a, b) a ## b\n#define XCAT(a, b) CAT(a, b)\n#define LP (\n#define APPLY(f, x) f x\n"
	cases := []struct {
		name, src, header string
		date              bool
	}{
		{name: "declarations", src: defs + "typedef int __DA; typedef int TE__;\nint k;\n"},
		{name: "in parentheses", src: defs + "int f(int __DA, int TE__);\n", date: true},
		{name: "a call a body opens", src: defs + "const char *d = APPLY(XCAT, LP) __DA, TE__ );\n", date: true},
		{name: "a call a body opens within parentheses", src: defs + "const char *d = (APPLY(XCAT, LP) __DA, TE__ ));\n", date: true},
		{name: "a call across an include's end", src: defs + "#include \"t5.h\"\n)\n", header: "APPLY(XCAT, LP) __DA, TE__\n", date: true},
		{name: "a call a body opens, a parenthesis a body closes", src: defs + "#define RP )\nconst char *d = APPLY(XCAT, LP) __DA, TE__ ), *e = ( \"x\" RP;\n", date: true},
		{name: "a call across a skipped block", src: defs + "const char *d = APPLY(XCAT, LP) __DA, TE__\n#if 0\n(\n#endif\n);\n", date: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.header != "" {
				if err := os.WriteFile(filepath.Join(dir, "t5.h"), []byte(c.header), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			scanHoldingDay(t, Input{Source: []byte(c.src), Path: "k.c", WorkDir: dir, Args: []string{"-I" + dir}}, c.date)
		})
	}
}

// TestPastedOutsideParenthesesCPlusPlus scans pieces outside every
// parenthesis after a digit separator and a raw string: under
// LexesCPlusPlus both are lexed as C++14 lexes them and the text stays
// balanced (no day in the key); lexed as any C++, the separator's
// apostrophe might open a literal and the raw string's parenthesis might
// be one, so the day is kept. An input may not claim both C and C++.
func TestPastedOutsideParenthesesCPlusPlus(t *testing.T) {
	const src = "#define CAT(a, b) a ## b\ntypedef int __DA; int n = 1'000;\n" +
		"const char *r = R\"x( ( \" )x\"; typedef int TE__;\nint k;\n"
	for _, cpp := range []bool{false, true} {
		scanHoldingDay(t, Input{Source: []byte(src), Path: "k.cu", LexesCPlusPlus: cpp}, !cpp)
	}
	in := Input{Source: []byte(src), Path: "k.cu", LexesC: true, LexesCPlusPlus: true}
	if _, _, err := NewScanner(nil).Scan(context.Background(), in); err == nil {
		t.Error("an input lexed as both C and C++ was scanned")
	}
}

// scanHoldingDay scans in, fails t unless its key holds the day exactly
// where date says, and returns the trace.
func scanHoldingDay(t *testing.T, in Input, date bool) []Dependency {
	t.Helper()
	_, trace, err := NewScanner(nil).Scan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.ContainsFunc(trace, func(d Dependency) bool { return d.Name == DateHeader }); got != date {
		t.Errorf("the key holds the day: %v, want %v", got, date)
	}
	return trace
}

// FuzzTargetWords holds targetWords to a plain split into words where no
// comment or literal can begin, and to pieces of targets everywhere.
func FuzzTargetWords(f *testing.F) {
	for _, s := range []string{"CAT(__TIMES, TAMP__)", "/* TIME */ DATE", `"a" 'b' R"(x)"`, "1'0 'x' TIME", "#define G(D, A...) D A E\nD"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		words := targetWords(text, len(text) > 0 && text[0]&1 == 1, nil)
		got := words.all
		for _, w := range words.grouped {
			if !slices.Contains(got, w) {
				t.Fatalf("%q is grouped, but not among all the words %q", w, got)
			}
		}
		for _, w := range got {
			if !targetPieceSet()[w] && w != "_" {
				t.Fatalf("%q is no piece of a target", w)
			}
		}
		// A branch not balanced is opened by a conditional's introducer.
		for _, at := range words.branches {
			if at < 0 || at >= len(text) || (text[at] != '#' && text[at] != '%') {
				t.Fatalf("targetWords(%q): branch at %d, which no introducer begins", text, at)
			}
		}
		if strings.ContainsAny(string(text), "/\"'") {
			return
		}
		var want []string
		for _, w := range strings.FieldsFunc(string(text), func(r rune) bool { return r > 0x7f || !continuesWord(byte(r)) }) {
			if targetPieceSet()[w] && !slices.Contains(want, w) {
				want = append(want, w)
			}
		}
		if strings.Contains(string(text), userLabelPrefix) && !slices.Contains(want, "_") {
			want = append(want, "_")
		}
		slices.Sort(got)
		slices.Sort(want)
		if strings.ContainsAny(string(text), "#0123456789") {
			// A definition's parameters are left out, and the letters of
			// a preprocessing number (0.A) are no word: fewer, never
			// others.
			for _, w := range got {
				if !slices.Contains(want, w) {
					t.Fatalf("targetWords(%q) = %q, which the words %q lack", text, got, want)
				}
			}
			return
		}
		if !slices.Equal(slices.Compact(got), want) {
			t.Fatalf("targetWords(%q) = %q, want %q", text, got, want)
		}
	})
}

// TestPredefinedWordsCoverClang checks predefinedWords against clang-15's
// own predefines: every identifier of a body is listed, or is a macro the
// compiler predefines, which expands in turn.
func TestPredefinedWordsCoverClang(t *testing.T) {
	clang, err := exec.LookPath("clang-15")
	if err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatal("KCACHE_REQUIRE_REAL=1 but clang-15 is missing (apt-get install clang-15)")
		}
		t.Skip("no clang-15")
	}
	bodies := map[string]string{}
	for _, args := range [][]string{{"-x", "cl"}, {"-x", "cl", "-cl-std=CL3.0"}, {"-x", "cl", "-target", "spir64"}, {"-x", "c"}, {"-x", "c++"}} {
		cmd := exec.Command(clang, append(args, "-dM", "-E", "-")...)
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if m := parseDefine(strings.TrimPrefix(line, "#define ")); m != nil && strings.HasPrefix(line, "#define ") {
				bodies[m.name] = strings.TrimPrefix(line, "#define ")
				for _, tok := range m.body {
					if tok.kind == tIdent && m.param(tok) < 0 {
						bodies["\x00"+tok.text] = m.name
					}
				}
			}
		}
	}
	for k, from := range bodies {
		word, ok := strings.CutPrefix(k, "\x00")
		if !ok {
			continue
		}
		if _, macro := bodies[word]; !macro && !predefinedWordSet()[word] {
			t.Errorf("%s expands to %s, which predefinedWords lacks", from, word)
		}
	}
}

// TestPastedFileNotRelocated scans a header that expands a file's path,
// pasted or through __builtin_FILE, under a base directory: its name must
// stay the path the compiler writes into the binary.
func TestPastedFileNotRelocated(t *testing.T) {
	for name, body := range map[string]string{
		"plain":           "int x;",
		"pasted":          "#define CAT(a, b) a ## b\nconst char* f = CAT(__FI, LE__);",
		"predefined L":    "#define CAT3(a, b, c) a ## b ## c\n#define X3(a, b, c) CAT3(a, b, c)\nconst char* f = X3(__FI, __INT64_C_SUFFIX__, E__);",
		"__builtin_FILE":  "int g(void) { return __builtin_FILE()[1]; }",
		"pasted function": "#define CAT(a, b) a ## b\nint g(void) { return CAT(__builtin_, FILE)()[1]; }",
	} {
		base := t.TempDir()
		inc := filepath.Join(base, "inc")
		os.MkdirAll(inc, 0o755)
		if err := os.WriteFile(filepath.Join(inc, "ts.h"), []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		in := Input{Source: []byte("#include \"ts.h\"\n"), Path: filepath.Join(base, "k.cl"), WorkDir: t.TempDir(), BaseDir: base, Args: []string{"-I" + inc}}
		_, trace, err := NewScanner(nil).Scan(context.Background(), in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		i := slices.IndexFunc(trace, func(d Dependency) bool { return strings.HasSuffix(d.Path, "/inc/ts.h") })
		if i < 0 {
			t.Fatalf("%s: no ts.h in %v", name, trace)
		}
		if relocated := strings.HasPrefix(trace[i].Name, BaseDirPrefix); relocated != (name == "plain") {
			t.Errorf("%s: ts.h named %q (relocated %v)", name, trace[i].Name, relocated)
		}
	}
}
