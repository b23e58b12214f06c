package deps

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// FuzzDirectives feeds file contents, as a scan reads them from disk, to
// the directive parser and the macro expander: neither may panic or run
// without bound, and each expansion ends in a header name or in one of the
// expected verdicts.
func FuzzDirectives(f *testing.F) {
	seeds := []string{
		"#include \"a.h\"\n#include <b/c.h>\n",
		"#define S(x) #x\n#define XS(x) S(x)\n#include XS(__FILE__)\n",
		`#define XM2S(x) #x` + "\n#define M2S(x) XM2S(x)\n#define INCLUDE_PATH .\n#include M2S(INCLUDE_PATH/inc_x.cl)\n",
		"#define CAT(a,b) a##b\n#define S(x) #x\n#define XS(x) S(x)\n#include XS(CAT(,x).h)\n",
		"#define F(x) F(x x)\n#define G(x) F(x)\n#include G(a)\n",
		"#define A B B B B\n#define B C C C C\n#define C D D D D\n#define D E E E E\n#define E A A A A\n#include A\n",
		"#define V(...) __VA_ARGS__\n#define W(a, b...) #b\n#include W(1, 2, \"3\")\n",
		"/* unterminated comment\n#include \"x.h\"",
		"#include \"unterminated\n#define X \\\r\n \"y.h\"\n#include X\n",
		"#if __has_include(<a.h>) && __has_include(\"b.h\")\n#elif __has_include_next(X\n#endif\n",
		"%:define H <h.h>\n%:include H\n#embed \"e\" limit(1)\n#include_next <n.h>\n#import \"i.h\"\n",
		"#define H(x) x\n#include H(\n#include H(<a.h>\n#include H(a,b)\n#define\n#define (\n#define F(a,\n#undef\n",
		"\xff\xfe#include \"\x00\".h\n#define \x80 1\n#include \x80\n",
		"f(\n#ifdef X\n)\n#elif defined(Y)\n(\n#else\n#include \"a.h\"\n#endif\n)\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dirs := parseFile(data, lexMode{}).directives
		table := newMacroTable()
		for _, d := range dirs {
			if d.unbalanced && d.kind != dIf && d.kind != dElse {
				t.Fatalf("a branch not balanced opened by %+v", d)
			}
			switch d.kind {
			case dDefine:
				if d.macro == nil || d.macro.name == "" {
					t.Fatalf("define without a macro: %+v", d)
				}
				table.define(d.macro)
			case dUndef:
				table.undef(d.name)
			case dCondition:
				hasIncludes(tokenize(d.name))
			default:
				if d.operand == nil {
					if strings.ContainsAny(d.name, "\n") {
						t.Fatalf("header name %q spans lines", d.name)
					}
					continue
				}
				variants, err := table.expandVariants(d.operand, func(n string) bool { return strings.HasPrefix(n, "__") })
				if err != nil && err != errUnknowable {
					t.Fatalf("expansion error %v", err)
				}
				if len(variants) > maxVariants {
					t.Fatalf("%d variants", len(variants))
				}
				for _, v := range variants {
					headerName(v)
				}
			}
		}
	})
}

// FuzzIncludeOperands checks that includeOperands finds exactly what
// includeLine finds over the whole text, in the same order: the search of
// the built-in headers' includes tries the regexp on some lines alone.
func FuzzIncludeOperands(f *testing.F) {
	for _, s := range []string{
		"#include <stdint.h>\n#  include_next \"a.h\"\n",
		"/* c */ # /* d */ import <x>\nint include;\n#define importance 1\n",
		"%:include \"p.h\"\r\n??=include <t.h>",
		"#inclimport\n#imporinclude <y>\n#include",
		"\n\n#include <last.h>",
		"x include y\n#include \"z.h\" include <w.h>\n#import import\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		var want [][]byte
		for _, m := range includeLine().FindAllSubmatch(text, -1) {
			want = append(want, bytes.TrimSpace(m[1]))
		}
		got := includeOperands(text)
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("%q: the lines found %q, the whole text %q", text, got, want)
		}
	})
}
