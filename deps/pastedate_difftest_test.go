package deps_test

// A differential check of the rule for pasted names (paste.go) against
// clang-15's own preprocessor: programs made at random from the pieces of
// __DATE__, macros whose parameters are named with them, calls, comments,
// literals and unterminated literals in skipped blocks, digit separators
// and raw strings, read as C and as C++14. Wherever clang's
// output holds the day, the key must hold it too (or the program be
// refused): anything else is another day's binary.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/kcache/kcache/deps"
)

// datePieces are the words the programs are made of: pieces of __DATE__
// and two that are none.
var datePieces = []string{"__", "_", "DA", "TE", "__DA", "TE__", "D", "A", "T", "E", "x", "y"}

// randomDateProgram returns a program of a few definitions and uses
// drawn by r.
func randomDateProgram(r *rand.Rand) string {
	pick := func() string { return datePieces[r.IntN(len(datePieces))] }
	var b strings.Builder
	b.WriteString("#define CAT(a, b) a ## b\n#define XCAT(a, b) CAT(a, b)\n#define LP (\n#define APPLY(f, x) f x\n#define ON 1\n")
	// A call's arguments are, half the time, a split of __DATE__ in order
	// (__DA TE__, __ DA TE__ ...), each maybe replaced by a parameter.
	call := func(params []string) string {
		split := [][]string{{"__DA", "TE__"}, {"__", "DA", "TE__"}, {"__DA", "TE", "__"}}[r.IntN(3)]
		whole := r.IntN(2) == 0
		arg := func(i int) string {
			if len(params) > 0 && r.IntN(3) == 0 {
				return params[r.IntN(len(params))]
			}
			if whole && i < len(split) {
				return split[i]
			}
			return pick()
		}
		if len(split) == 2 && r.IntN(2) == 0 {
			if r.IntN(2) == 0 {
				return fmt.Sprintf("CAT(%s, %s)", arg(0), arg(1))
			}
			return fmt.Sprintf("XCAT(%s, %s)", arg(0), arg(1))
		}
		return fmt.Sprintf("XCAT(XCAT(%s, %s), %s)", arg(0), arg(1), arg(2))
	}
	noise := func() {
		switch r.IntN(11) {
		case 0:
			fmt.Fprintf(&b, "/* %s */ ", pick())
		case 1:
			fmt.Fprintf(&b, "// %s\n", pick())
		case 2:
			fmt.Fprintf(&b, "\"%s\" ", pick())
		case 3:
			fmt.Fprintf(&b, "#if 0\n\"%s /*\n#endif\n", pick())
		case 4:
			fmt.Fprintf(&b, "#if 0\n'%s /*\n#endif\n", pick())
		case 5:
			b.WriteString("/*\n")
		case 6:
			b.WriteString("*/\n")
		case 7: // a digit separator, or in C a character literal that never closes
			fmt.Fprintf(&b, "int q = 1'%s;\n", pick())
		case 8:
			fmt.Fprintf(&b, "int q = 0x1'f'%s (\n", pick())
		case 9: // a raw string, or in C an R and an ordinary literal
			fmt.Fprintf(&b, "const char *r = R\"x( ( %s \" )x\";\n", pick())
		case 10:
			fmt.Fprintf(&b, "const char *r = R\"(\n%s /* ) */\n)\";\n", pick())
		}
	}
	for n := range 1 + r.IntN(3) {
		p1, p2 := pick(), pick()
		for p2 == p1 {
			p2 = pick()
		}
		params := []string{p1, p2}
		var body string
		switch r.IntN(3) {
		case 0:
			body = call(params)
		case 1:
			body = params[r.IntN(2)] + " " + pick()
		default:
			body = p1 + " ## " + p2
		}
		if r.IntN(3) == 0 {
			noise()
		}
		// The forms a definition's line takes: blanks, a comment before it
		// or continuing it, a digraph, GNU's named variadic parameter, and
		// an object-like macro whose body begins with what looks like a
		// parameter list.
		form := []string{"#define G%d(%s, %s) %s\n", "  #  define G%d( %s ,%s ) %s\n", "/**/#define G%d(%s, %s) /*\n*/ %s\n",
			"%%:define G%d(%s, %s) %s\n", "#define G%d (%s, %s) %s\n", "#define G%d(%s, %s...) %s\n"}[r.IntN(6)]
		fmt.Fprintf(&b, form, n, p1, p2, body)
	}
	for n := range 1 + r.IntN(3) {
		if r.IntN(2) == 0 {
			noise()
		}
		// Pieces outside parentheses, and calls a body's ( opens, whose
		// arguments stand outside the text's own parentheses, a third of
		// them in a branch that is or is not taken.
		p1, p2 := pick(), pick()
		wrapped := r.IntN(3) == 0
		if wrapped {
			b.WriteString([]string{"#ifdef ON\n", "#ifdef OFF\n", "#if defined(OFF)\n", "#ifndef ON\n", "#ifdef OFF\n#else\n"}[r.IntN(5)])
		}
		switch r.IntN(6) {
		case 0:
			fmt.Fprintf(&b, "typedef int %s; typedef int %s;\n", p1, p2)
		case 1:
			fmt.Fprintf(&b, "const char *v%d = APPLY(XCAT, LP) %s, %s );\n", n, p1, p2)
		case 2:
			fmt.Fprintf(&b, "const char *v%d = (APPLY(XCAT, LP) %s, %s ));\n", n, p1, p2)
		case 3:
			fmt.Fprintf(&b, "const char *v%d = APPLY(XCAT, LP) %s, %s\n#if 0\n(\n#endif\n);\n", n, p1, p2)
		default:
			use := call(nil)
			if r.IntN(2) == 0 {
				use = fmt.Sprintf("G%d(%s, %s)", r.IntN(2), pick(), pick())
			}
			fmt.Fprintf(&b, "\nconst char *v%d = %s;\n", n, use)
		}
		if wrapped {
			b.WriteString("#endif\n")
		}
	}
	return b.String()
}

// TestPastedDateAgainstClang runs random programs through clang-15 -E and
// the scanner, as C and as C++14 (Input.LexesCPlusPlus);
// KCACHE_PASTE_CASES sets how many of each (400).
func TestPastedDateAgainstClang(t *testing.T) {
	clang := requireClang(t)
	for _, lang := range []struct {
		name string
		args []string
		cpp  bool
	}{
		{"c", []string{"-x", "c"}, false},
		{"c++14", []string{"-x", "c++", "-std=c++14"}, true},
	} {
		t.Run(lang.name, func(t *testing.T) {
			preprocess := func(src string) (string, error) {
				cmd := exec.Command(clang, append(append([]string{"-E", "-P"}, lang.args...), "-")...)
				cmd.Stdin = strings.NewReader(src)
				out, err := cmd.Output()
				return string(out), err
			}
			scan := func(src string) ([]deps.Dependency, error) {
				in := deps.Input{Source: []byte(src), Path: "k.c", WorkDir: t.TempDir(), LexesCPlusPlus: lang.cpp}
				_, trace, err := deps.NewScanner(nil).Scan(context.Background(), in)
				return trace, err
			}
			checkPastedDate(t, preprocess, scan)
		})
	}
}

// checkPastedDate runs KCACHE_PASTE_CASES random programs through
// preprocess and scan, and fails where the first's output holds the day
// and the second's key does not.
func checkPastedDate(t *testing.T, preprocess func(string) (string, error), scan func(string) ([]deps.Dependency, error)) {
	today, err := preprocess("__DATE__\n")
	if err != nil {
		t.Fatal(err)
	}
	today = strings.TrimSpace(today)
	r := rand.New(rand.NewPCG(1, 2))
	var holds, keyed, needless, refused int
	for range envInt(t, "KCACHE_PASTE_CASES", 400) {
		src := randomDateProgram(r)
		out, err := preprocess(src)
		if err != nil {
			continue // clang rejects it: no binary comes of it
		}
		trace, err := scan(src)
		if errors.Is(err, deps.ErrUncacheable) {
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		date := false
		for _, d := range trace {
			date = date || d.Name == deps.DateHeader
		}
		in := strings.Contains(out, today)
		switch {
		case in && !date:
			t.Errorf("clang's output holds the day, the key does not:\n%s\n--- clang -E:\n%s", src, out)
		case in:
			holds++
		case date:
			needless++
		}
		if date {
			keyed++
		}
	}
	if holds == 0 {
		t.Fatal("no program held the day: the check proves nothing")
	}
	t.Logf("%d programs held the day; the key held it for %d, %d of them needlessly; %d refused", holds, keyed, needless, refused)
}
