package deps_test

import (
	"testing"
)

// TestOptionLinesAsClang holds the scan of the build's options to what
// clang-15 makes of them as PoCL 3.1 runs it (clangAsPoCL): clang writes
// each -D, -U, -include and -imacros as a line of its predefines buffer and
// lexes the lines as one text, then reads every -imacros file before the
// first -include file, and PoCL includes its own headers after both (which
// define and undefine names of their own). Each
// header clang reads must be keyed, or the source refused. Options behind
// a tab reach clang as options of their own (PoCL checks only its split at
// blanks).
func TestOptionLinesAsClang(t *testing.T) {
	clang := requireClang(t)
	const xs = "#define S(x) #x\n#define XS(x) S(x)\n"
	const pi = "3.14159265358979323846264338327950288f.h" // M_PI_F, as opencl-c-base.h spells it
	for _, tc := range []struct {
		name, src string
		options   []string
	}{
		// The comment X opens runs over -DH=b to Y's */: H is undefined.
		{"comment over options", xs + "#include XS(H.h)\n", []string{"-DX=/*", "-DH=b", "-DY=*/"}},
		{"comment from a -U", xs + "#include XS(H.h)\n", []string{"-UX/*", "-DH=b", "-DY=*/"}},
		// ??/ is a backslash where trigraphs are replaced (OpenCL C):
		// it splices the next line, -DH=b, into X's body.
		{"trigraph splice", xs + "#include XS(H.h)\n", []string{"-DX=a??/", "-DH=b"}},
		// ??= is #: T stringizes.
		{"trigraph in a body", "#include T(b.h)\n", []string{"-DT(x)=??=x"}},
		{"trigraph in a -include", "int k;\n", []string{"-DA\t-include\tx??=.h"}},
		// #undef "H junk" undefines H.
		{"-U with more tokens", xs + "#include XS(H.h)\n", []string{"-DH=b", "-DA\t-U\"H junk\""}},
		// ib.h, an -imacros file, is read first and defines G, so ia.h's
		// guarded definition of H is never made.
		{"-imacros before -include", xs + "#include XS(H.h)\n", []string{"-DA\t-include\tia.h\t-imacros\tib.h"}},
		// opencl-c-base.h, included by PoCL after u.h, defines M_PI_F
		// again.
		{"built-in headers after -include", xs + "#include XS(M_PI_F.h)\n", []string{"-DA\t-include\tu.h"}},
		// Without read-write images (OpenCL C 1.2), _kernel.h undefines
		// CLANG_HAS_RW_IMAGES, whatever an option or a -include made it.
		{"built-in #undef of an option", xs + "#include XS(CLANG_HAS_RW_IMAGES.h)\n", []string{"-cl-std=CL1.2", "-DCLANG_HAS_RW_IMAGES=b"}},
		{"built-in #undef of a -include", xs + "#include XS(CLANG_HAS_RW_IMAGES.h)\n", []string{"-cl-std=CL1.2", "-DA\t-include\trw.h"}},
		// PoCL's pocl_types.h includes <stdint.h>, from the build's
		// search path, without __USE_CLANG_OPENCL_C_H and with
		// __CBUILD__ (real PoCL builds so, reading inc/stdint.h).
		{"a built-in header's include", "int k;\n", []string{"-DA\t-U__USE_CLANG_OPENCL_C_H -D__CBUILD__ -I inc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"a.h": "", "b.h": "", "H.h": "", "x#.h": "", pi: "",
				"ia.h": "#ifndef G\n#define G\n#define H a\n#endif\n", "ib.h": "#define G\n", "u.h": "#define M_PI_F b\n",
				"CLANG_HAS_RW_IMAGES.h": "", "rw.h": "#define CLANG_HAS_RW_IMAGES b\n", "inc/stdint.h": ""}
			src := tc.src + "kernel void k(void) {}\n"
			if read, uncacheable := keyHoldsWhatClangReads(t, clang, files, src, tc.options...); !uncacheable && read == 0 {
				t.Errorf("clang reads none of the headers: the case shows nothing")
			}
		})
	}
}
