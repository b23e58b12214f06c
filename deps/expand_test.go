package deps

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// expandedNames applies opts and the directives of text as a scan would,
// and returns what text's last #include may name ("<x>" for an angled
// name), sorted.
func expandedNames(opts, text string) ([]string, error) {
	t := newMacroTable()
	t.applyOptions(parseArgs(SplitOptions(opts), "/wd", false).macros, nil)
	var last directive
	for _, d := range parseFile([]byte(text), lexMode{tri: TrigraphsOn, onlyC: true}).directives {
		switch d.kind {
		case dDefine:
			t.define(d.macro)
		case dUndef:
			t.undef(d.name)
		case dIf:
			t.enter(d.name != "" && t.undefined(d.name, nil) && !strings.HasPrefix(d.name, "__"))
		case dElse:
			t.next(0, d.name == "else")
		case dEndif:
			t.leave(0)
		case dInclude:
			last = d
		}
	}
	if last.operand == nil {
		return []string{last.name}, nil
	}
	reserved := func(name string) bool { return strings.HasPrefix(name, "__") }
	variants, err := t.expandVariants(last.operand, reserved)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, v := range variants {
		if name, angle, ok := headerName(v); ok {
			if angle {
				name = "<" + name + ">"
			}
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

const strMacros = "#define S(x) #x\n#define XS(x) S(x)\n"

func TestExpandComputedIncludes(t *testing.T) {
	hashcat := `-D INCLUDE_PATH=. -D "XM2S(x)=#x" -D "M2S(x)=XM2S(x)"`
	tests := []struct {
		name, opts, text string
		want             []string
		err              error
	}{
		{"hashcat", hashcat, "#include M2S(INCLUDE_PATH/inc_x.cl)", []string{"./inc_x.cl"}, nil},
		{"hashcat absolute", `-D INCLUDE_PATH=/usr/share/hashcat/OpenCL -D "XM2S(x)=#x" -D "M2S(x)=XM2S(x)"`,
			"#include M2S(INCLUDE_PATH/inc_vendor.h)", []string{"/usr/share/hashcat/OpenCL/inc_vendor.h"}, nil},
		{"hashcat joined options", `-DINCLUDE_PATH=k -D'XM2S(x)=#x' -DM2S(x)=XM2S(x)`,
			"#include M2S(INCLUDE_PATH/inc-1.2_x.cl)", []string{"k/inc-1.2_x.cl"}, nil},
		{"literal", "", `#include "a.h"`, []string{"a.h"}, nil},
		{"object-like string", "", "#define H \"a.h\" // comment\n#include H", []string{"a.h"}, nil},
		{"object-like angled", "", "#define H <sys/x.h>\n#include H", []string{"<sys/x.h>"}, nil},
		{"continued line", "", "#define H \\\n  \"b.h\"\n#include /* c */ H", []string{"b.h"}, nil},
		{"comment spans lines", "", "#define H /* one\ntwo */ \"c.h\"\n#include H", []string{"c.h"}, nil},
		{"paste", "", strMacros + "#define CAT(a,b) a##b\n#include XS(CAT(inc_,x).h)", []string{"inc_x.h"}, nil},
		{"paste empty argument", "", strMacros + "#define CAT(a,b) a##b\n#include XS(CAT(,x).h)", []string{"x.h"}, nil},
		{"nested calls", "", "#define F(x) G(x)\n#define G(x) #x\n#include F(hdr.h)", []string{"hdr.h"}, nil},
		{"# does not expand", "", strMacros + "#define A b\n#include S(A.h)", []string{"A.h"}, nil},
		{"argument expands first", "", strMacros + "#define A b\n#include XS(A.h)", []string{"b.h"}, nil},
		{"stringify spacing", "", strMacros + "#define P dir  /  sub\n#include XS(P/x.h)", []string{"dir / sub/x.h"}, nil},
		{"stringify escapes", "", strMacros + "#define Q \"q\"\n#include XS(Q.h)", []string{`\"q\".h`}, nil},
		{"a literal of the include's own text is a header name", "", strMacros + "#include S(\"q\".h)", []string{`"q".h`}, nil},
		{"branches give every definition", "", strMacros + "#ifdef X\n#define V one\n#else\n#define V two\n#endif\n#include XS(v/V.h)",
			[]string{"v/one.h", "v/two.h"}, nil},
		{"undef keeps both", "", strMacros + "#define V a\n#ifdef Y\n#undef V\n#endif\n#include XS(V.h)", []string{"V.h", "a.h"}, nil},
		{"-U option is exact", "-D V=a -U V", strMacros + "#include XS(V.h)", []string{"V.h"}, nil},
		{"later -D wins", "-D V=a -D V=b", strMacros + "#include XS(V.h)", []string{"b.h"}, nil},
		{"-D without value is 1", "-D V", strMacros + "#include XS(V.h)", []string{"1.h"}, nil},
		{"self reference", "", strMacros + "#define A A\n#include XS(A.h)", []string{"A.h"}, nil},
		{"mutual reference", "", strMacros + "#define A B\n#define B A\n#include XS(A.h)", []string{"A.h"}, nil},
		{"variadic", "", "#define S(...) #__VA_ARGS__\n#include S(a.h)", []string{"a.h"}, nil},
		{"named variadic", "", "#define S(args...) #args\n#include S(a, b.h)", []string{"a, b.h"}, nil},
		{"rescan takes later arguments", "", strMacros + "#define F XS\n#include F(z.h)", []string{"z.h"}, nil},
		{"macro name without call", "", "#define F(x) x\n#define H F\n#include H", nil, nil},
		{"unterminated call", "", strMacros + "#include S(a.h", nil, nil},
		{"wrong argument count", "", strMacros + "#include S(a,b)", nil, nil},
		{"reserved name may be predefined", "", strMacros + "#include XS(__FOO__.h)", nil, errUnknowable},
		{"__VA_OPT__ unsupported", "", "#define S(x, ...) #x __VA_OPT__(y)\n#include S(a)", nil, errUnknowable},
		// The cases below were checked against clang -E.
		{"empty macros keep spacing", "", strMacros + "#define E\n#include XS( E a E . E h E )", []string{"a . h"}, nil},
		{"painted name stays", "", strMacros + "#define ID(x) x\n#define G ID(ID)(a.h)\n#include XS(G)", []string{"ID(a.h)"}, nil},
		{"C11 6.10.3.5 rescan", "", strMacros + "#define f(a) a*g\n#define g(a) f(a)\n#include XS(f(2)(9))", []string{"2*9*g"}, nil},
		{"C11 6.10.3.3 hash_hash", "", "#define hash_hash # ## #\n#define mkstr(a) # a\n#define in_between(a) mkstr(a)\n" +
			"#define join(c, d) in_between(c hash_hash d)\n#include join(x, y)", []string{"x ## y"}, nil},
		{"self call stops", "", "#define F(x) F(x x)\n#define G(x) F(x)\n#include G(a)", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := expandedNames(tt.opts, tt.text)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("names = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestExpandTooManyVariants checks that a combinatorial explosion of
// candidate definitions gives up (the key widens) rather than running on.
func TestExpandTooManyVariants(t *testing.T) {
	var b strings.Builder
	b.WriteString(strMacros)
	var parts []string
	for i := range 9 {
		n := string(rune('A' + i))
		b.WriteString("#define " + n + " x\n#define " + n + " y\n")
		parts = append(parts, n)
	}
	b.WriteString("#include XS(" + strings.Join(parts, "/") + ".h)\n")
	if _, err := expandedNames("", b.String()); !errors.Is(err, errUnknowable) {
		t.Fatalf("err = %v, want errUnknowable", err)
	}
}

func TestSplitOptions(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  -DA=1\t-I /x  ", []string{"-DA=1", "-I", "/x"}},
		{`-D "XM2S(x)=#x" -D "M2S(x)=XM2S(x)"`, []string{"-D", "XM2S(x)=#x", "-D", "M2S(x)=XM2S(x)"}},
		{`-I "/a b/c" -D'S=a "b"'`, []string{"-I", "/a b/c", `-DS=a "b"`}},
		{`-I/a\ b -D"A=\"s\""`, []string{"-I/a b", `-DA="s"`}},
		{`-D ""`, []string{"-D", ""}},
	}
	for _, tt := range tests {
		if got := SplitOptions(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("SplitOptions(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	inv := parseArgs(SplitOptions("-I a -I/b -iquote q -isystem s -idirafter z -include f.h -imacros m.h -DX -U Y -cl-std=CL2.0 -Iz2"), "/wd", true)
	if want := []string{"/wd", "/wd/a", "/b", "/wd/z2", "/wd/s", "/wd/z"}; !slices.Equal(inv.angledDirs, want) {
		t.Errorf("angled dirs %q, want %q", inv.angledDirs, want)
	}
	if want := []string{"/wd/q"}; !slices.Equal(inv.quoteDirs, want) {
		t.Errorf("quote dirs %q, want %q", inv.quoteDirs, want)
	}
	// clang reads every -imacros file before the first -include file.
	if want := []string{"m.h", "f.h"}; !slices.Equal(inv.forced, want) {
		t.Errorf("forced %q, want %q", inv.forced, want)
	}
	if want := []optMacro{{true, "X"}, {false, "Y"}}; !slices.Equal(inv.macros, want) {
		t.Errorf("macros %v, want %v", inv.macros, want)
	}
	nvrtc := parseArgs([]string{"--include-path=a", "--include-path", "/b", "--define-macro=N=4", "--undefine-macro", "M",
		"--pre-include=p.h", "--gpu-architecture=sm_90", "--std=c++17"}, "/wd", false)
	if want := []string{"/wd/a", "/b"}; !slices.Equal(nvrtc.angledDirs, want) {
		t.Errorf("NVRTC include paths %q, want %q", nvrtc.angledDirs, want)
	}
	if want := []optMacro{{true, "N=4"}, {false, "M"}}; !slices.Equal(nvrtc.macros, want) {
		t.Errorf("NVRTC macros %v, want %v", nvrtc.macros, want)
	}
	if want := []string{"p.h"}; !slices.Equal(nvrtc.forced, want) {
		t.Errorf("NVRTC pre-includes %q, want %q", nvrtc.forced, want)
	}
}

func TestParseDirectives(t *testing.T) {
	src := "#include \"a.h\"\n  #  include <b/c.h>\n#include MACRO\n// #include \"d.h\"\n/*\n#include \"e.h\"\n*/\n" +
		"int x; #include \"f.h\"\nchar *s = \"\\\n#include \\\"g.h\\\"\";\n#include_next <h.h>\n#import \"i.h\"\n" +
		"#if __has_include(<j.h>) && __has_include(\"k.h\")\n#endif\n#embed \"l.bin\" limit(4)\n%:include \"m.h\"\n#include\n#include /* */\n"
	var got []string
	for _, d := range parseFile([]byte(src), lexMode{tri: TrigraphsOn, onlyC: true}).directives {
		if d.kind == dCondition {
			continue
		}
		s := d.name
		if d.operand != nil {
			s = "expand:" + spell(d.operand)
		}
		got = append(got, map[dirKind]string{dInclude: "inc", dIncludeNext: "next", dEmbed: "embed", dHasInclude: "has",
			dIf: "if", dElse: "else", dEndif: "endif"}[d.kind]+" "+s)
	}
	want := []string{"inc a.h", "inc b/c.h", "inc expand:MACRO", "next h.h", "inc i.h", "if ", "has j.h", "has k.h", "endif ", "embed l.bin", "inc m.h"}
	if !slices.Equal(got, want) {
		t.Errorf("directives\n%q\nwant\n%q", got, want)
	}
}
