package deps

import "testing"

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
