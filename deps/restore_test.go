package deps

import (
	"strings"
	"testing"
)

// TestRestoreOperators holds restoreOperators to the pastes that may spell
// _Pragma and to the stringizing of a parameter, and nothing else: a
// paste with a literal operand that is no piece of the word (PoCL's
// _cl_##FUNC) cannot spell it, and an object-like macro's # is a token.
func TestRestoreOperators(t *testing.T) {
	for _, tc := range []struct {
		define             string
		pastes, stringizes bool
	}{
		{"CAT(a, b) a ## b", true, false},
		{"CAT3(a, b, c) a ## b ## c", true, false},
		{"P _Pra ## gma", true, false},
		{"P(x) _Pr ## x", true, false},
		{"P(x) x ## agma", true, false},
		{"P(x) _P ## x ## ma", true, false},
		{"V(...) __VA_ARGS__ ## x", false, false},
		{"V(...) g ## __VA_ARGS__", true, false},
		{"PREFIX(FUNC) _cl_##FUNC", false, false},
		{"A(_t) typedef int __cl_ai##_t[1];", false, false},
		{"P(x) _P ## x ## cl", false, false},
		{"P(x, y) x ## y _cl_ ## y", true, false},
		{"S(x) #x", false, true},
		{"S(x) %:x", false, true},
		{"C(a, b) a %:%: b", true, false},
		{"SA(_t, _x) _Static_assert(_x, #_t)", false, true},
		{"HASH # x", false, false},
		{"N(x) x + 1", false, false},
	} {
		m := parseDefine(tc.define)
		if m == nil {
			t.Fatalf("%s: no macro", tc.define)
		}
		pastes, stringizes := m.restoreOperators()
		if pastes != tc.pastes || stringizes != tc.stringizes {
			t.Errorf("#define %s: pastes %v, stringizes %v; want %v, %v", tc.define, pastes, stringizes, tc.pastes, tc.stringizes)
		}
	}
}

// TestHoldsPragmaPiece holds holdsPragmaPiece to the identifiers a paste
// can begin _Pragma with, spelled apart from any longer identifier, and
// to the side of caution where a character may or may not continue one.
func TestHoldsPragmaPiece(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"CAT(_Pra, gma)", true},
		{"CAT(_, Pragma)", true},
		{"_", true},
		{"x _P", true},
		{"_Pr)", true},
		{"_Prag/**/ma", true},
		{"_Pragm", true},
		{"_Pragma", true},
		{"\"_Pra\"", true},     // in a literal: a needless refusal at most
		{"// _Pra\n", true},    // in a comment, likewise
		{"_P$", true},          // $ may end the identifier
		{"é_Pra", true},        // a UTF-8 letter before it, likewise
		{"\\u00e9_Pra", false}, // a universal character name continues it
		{"__CLC_BODY", false},
		{"__P", false},
		{"x_P", false},
		{"1_P", false}, // a pp-number
		{"_Prx", false},
		{"_Pragmatic", false},
		{"_cl_##FUNC", false},
		{"pop_ macro", false},
		{"", false},
	} {
		if got := holdsPragmaPiece(tc.text); got != tc.want {
			t.Errorf("holdsPragmaPiece(%q) = %v, want %v", tc.text, got, tc.want)
		}
		if got := holdsPragmaPiece([]byte(tc.text)); got != tc.want {
			t.Errorf("holdsPragmaPiece([]byte(%q)) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// FuzzHoldsPragmaPiece: wherever the scanner's lexer finds an identifier
// that begins _Pragma, the text search finds a piece.
func FuzzHoldsPragmaPiece(f *testing.F) {
	for _, s := range []string{"CAT(_Pra, gma)", "a_P _P", "_$P", "x/**/_Pr", "\"_P\"_Pr", "%:define X _", "1._P"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range tokenize(text) {
			if tok.kind == tIdent && tok.text != "" && strings.HasPrefix(pragmaOperator, tok.text) && !holdsPragmaPiece(text) {
				t.Fatalf("the lexer finds %q in %q; the search finds no piece", tok.text, text)
			}
		}
	})
}
