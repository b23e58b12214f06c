package deps

import (
	"slices"
	"testing"
)

// TestDirectiveLinesCPlusPlus lexes text as C++14 does: a raw string runs
// across lines and hides what looks like a directive, a digit separator
// begins no literal, and what compilers lex apart (a number beside $, a
// raw string whose delimiter is none, a raw string in a directive) is
// reported unsure. Each was checked with clang-15 -std=c++14 -E.
func TestDirectiveLinesCPlusPlus(t *testing.T) {
	cases := []struct {
		text   string
		want   []string
		unsure bool
	}{
		{"const char *s = R\"x(\n#include \"b.h\"\n)x\";\n#include \"a.h\"\n", []string{`include "a.h"`}, false},
		{"int n = 1'000'000;\n#if 1'0 > 2\n#endif\n", []string{"if 1'0 > 2", "endif"}, false},
		{"int n = 0x1'ff'e+1;\n#define A 1\n", []string{"define A 1"}, false},
		{"int n = 1'$;\n#define A 1\n", []string{"define A 1"}, true},
		{"int n = 1$'0';\n#define A 1\n", []string{"define A 1"}, true},
		{"const char *s = R\"a b(x)a b\";\n#define A 1\n", []string{"define A 1"}, true},
		// Unsure: what follows is read as after an ordinary literal.
		{"const char *s = R\"x(never closes\n#define A 1\n", []string{"define A 1"}, true},
		{"#define S R\"(x)\"\n", []string{`define S R"(x)"`}, true},
	}
	for _, c := range cases {
		got, _, unsure := directiveLines([]byte(c.text), true)
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: directives %q, want %q", c.text, got, c.want)
		}
		if (unsure != "") != c.unsure {
			t.Errorf("%q: unsure %q, want unsure %v", c.text, unsure, c.unsure)
		}
	}
	// Read as C, the raw string is an ordinary literal on its line: the
	// include within it is a directive.
	if got, _, _ := directiveLines([]byte(cases[0].text), false); len(got) != 2 {
		t.Errorf("lexed as C: directives %q, want both includes", got)
	}
}

// TestDefinedName reads the name an #if tests for a definition, where
// the whole expression is that test, and nothing elsewhere.
func TestDefinedName(t *testing.T) {
	for rest, want := range map[string]string{
		" defined(X)":          "X",
		"defined X":            "X",
		" defined ( _Y1 ) \t ": "_Y1",
		"defined(X) && Y":      "",
		"defined(X":            "",
		"defined X)":           "",
		"definedX":             "",
		"defined":              "",
		"defined()":            "",
		"defined(1)":           "",
		"!defined(X)":          "",
		"defined(X)(":          "",
		"X":                    "",
		"defined(caf\xc3\xa9)": "caf\xc3\xa9", // clang takes UTF-8 in names
	} {
		if got := definedName(rest); got != want {
			t.Errorf("definedName(%q) = %q, want %q", rest, got, want)
		}
	}
}
