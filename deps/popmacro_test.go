package deps_test

import (
	"testing"
)

// TestPopMacroAsClang: #pragma pop_macro (or _Pragma("pop_macro(...)"))
// gives a macro back the state it had at its push_macro, undefined
// included, after a definition the scan took as certain: #define H b then
// pop_macro("H") leaves XS(H.h) naming H.h; clang runs the pragma also
// where no text names it, its name pasted and its string stringized from
// pieces. Every header clang-15 reads must be keyed, or the source refused.
// Without a piece to begin the paste with (_Pra, or _ and Pra, in a text or
// an option), no paste makes the name, and a definition stays certain: the
// source whose computed include names a reserved name, which the compiler
// could predefine, is then keyed as clang reads it (cacheable), not refused.
func TestPopMacroAsClang(t *testing.T) {
	clang := requireClang(t)
	const xs = "#define S(x) #x\n#define XS(x) S(x)\n"
	const cat = "#define CAT(a, b) a ## b\n"
	const xcat = "#define XCAT(a, b) CAT(a, b)\n"
	for _, tc := range []struct {
		name, src string
		options   []string
		cacheable bool // the scan must key it, not refuse it
	}{
		{"pragma", xs + "#pragma push_macro(\"H\")\n#define H b\n#pragma pop_macro(\"H\")\n#include XS(H.h)\n", nil, false},
		{"_Pragma", xs + "_Pragma(\"push_macro(\\\"H\\\")\")\n#define H b\n_Pragma(\"pop_macro(\\\"H\\\")\")\n#include XS(H.h)\n", nil, false},
		{"after #undef", "#define H \"a.h\"\n#pragma push_macro(\"H\")\n#undef H\n#pragma pop_macro(\"H\")\n#include H\n", nil, false},
		{"in a header", xs + "#pragma push_macro(\"H\")\n#define H b\n#include \"pop.h\"\n#include XS(H.h)\n", nil, false},
		// No text names _Pragma or pop_macro: both are pasted from pieces,
		// the pragma's string stringized through XS.
		{"pasted", xs + cat + "#pragma push_macro(\"H\")\n#define H b\nCAT(_Pra, gma)(XS(CAT(pop_, macro)(\"H\")))\n#include XS(H.h)\n", nil, false},
		{"pasted with digraphs", "%:define S(x) %:x\n%:define XS(x) S(x)\n%:define CAT(a, b) a %:%: b\n#pragma push_macro(\"H\")\n#define H b\nCAT(_Pra, gma)(XS(CAT(pop_, macro)(\"H\")))\n#include XS(H.h)\n", nil, false},
		{"pasted in headers", "#include \"cat.h\"\n#pragma push_macro(\"H\")\n#define H b\n#include \"xs.h\"\nPRAGMA(CAT(pop_, macro)(\"H\"))\n#include XS(H.h)\n", nil, false},
		// The piece only in an option, expanded before the paste.
		{"piece in an option", xs + cat + xcat + "#pragma push_macro(\"H\")\n#define H b\nXCAT(P, gma)(XS(CAT(pop_, macro)(\"H\")))\n#include XS(H.h)\n", []string{"-DP=_Pra"}, false},
		// The piece pasted from a shorter one.
		{"piece pasted", xs + cat + xcat + "#pragma push_macro(\"H\")\n#define H b\nXCAT(CAT(_, Pra), gma)(XS(CAT(pop_, macro)(\"H\")))\n#include XS(H.h)\n", nil, false},
		// The whole _Pragma in options, which PoCL passes without a
		// double quote (it makes each a blank): no text names it, and
		// nothing pastes.
		{"_Pragma in an option", "#pragma push_macro(\"H\")\n#define H b\nP\n#include XS(H.h)\n", []string{"-DS(x)=#x", "-DXS(x)=S(x)", "-DP=_Pragma(XS(pop_macro(S(H))))"}, false},
		// Pieces spelled only through the lexer's translation phases: a
		// line splice and a trigraph's (clang reads _Pra), a piece in a
		// -include file, a variadic paste (a ## __VA_ARGS__). (A universal
		// character name makes no piece: clang rejects \u005F.)
		{"piece spliced", xs + cat + "#pragma push_macro(\"H\")\n#define H b\nCAT(_P\\\nra, gma)(XS(CAT(pop_, macro)(\"H\")))\n#include XS(H.h)\n", nil, false},
		{"piece through a trigraph", xs + cat + "#pragma push_macro(\"H\")\n#define H b\nCAT(_??/\nPra, gma)(XS(CAT(pop_, macro)(\"H\")))\n#include XS(H.h)\n", nil, false},
		{"trigraph piece, C++ behind a tab", xs + cat + "#pragma push_macro(\"H\")\n#define H b\nCAT(_??/\nPra, gma)(XS(CAT(pop_, macro)(\"H\")))\n#include XS(H.h)\n", []string{"-DA\t-cl-std=CLC++"}, false},
		{"piece in a -include file", xs + cat + xcat + "#pragma push_macro(\"H\")\n#define H b\nXCAT(P, gma)(XS(CAT(pop_, macro)(\"H\")))\n#include XS(H.h)\n", []string{"-DA\t-include\tpiece.h"}, false},
		{"variadic paste", xs + "#define G(a, ...) a ## __VA_ARGS__\n#pragma push_macro(\"H\")\n#define H b\nG(_Pra, gma)(XS(G(pop_, macro)(\"H\")))\n#include XS(H.h)\n", nil, false},
		// Both halves, no piece: libclc's __CLC_BODY, under PoCL's
		// stringizing headers.
		{"no piece", xs + cat + "#define __H b\n#include XS(__H.h)\n#undef __H\n", nil, true},
		{"no piece, in headers", "#include \"join.h\"\n#define __H b\n#include \"xs.h\"\n#include XS(__H.h)\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"a.h": "", "b.h": "", "H.h": "", "__H.h": "", "pop.h": "#pragma pop_macro(\"H\")\n",
				"cat.h": cat + "#define PRAGMA(x) CAT(_Pr, agma)(XS(x))\n", "xs.h": xs, "join.h": cat,
				"piece.h": "#define P _Pra\n"}
			src := tc.src + "kernel void k(void) {}\n"
			if _, uncacheable := keyHoldsWhatClangReads(t, clang, files, src, tc.options...); uncacheable && tc.cacheable {
				t.Errorf("refused; no paste can make _Pragma here")
			}
		})
	}
}
