package deps

import (
	"fmt"
	"slices"
)

// A header is followed again when it is included again, unless nothing its
// subtree's expansions depended on has changed since: a header that holds
// no computed include, or includes one only through headers that expand
// names which have gained no definition since, names the same files every
// time. The scanner takes every branch of a conditional as live, so the
// macro table only grows, and a name's version (macroTable.version) tells
// whether its candidates changed.

// unseenName stands, among the names a subtree consulted, for whether an
// include was found nowhere, which makes every unknown name suspicious.
const unseenName = "\x00unseen"

// hasIncludeName stands for the set of macros whose bodies test for a
// file: a conditional that expands none of them today may expand one
// tomorrow.
const hasIncludeName = "\x00has-include"

// scanState is what a followed file's subtree depended on.
type scanState struct {
	// inProgress marks a file whose subtree is being followed: an
	// include cycle reaching it again follows it again only when its
	// inputs changed since it started (at most maxIncludeDepth deep).
	inProgress bool
	names      []string // names the subtree's expansions looked up
	versions   []int    // their versions then
}

// changed reports whether following the file again could find other
// files.
func (sc *scan) changed(st *scanState) bool {
	if st.inProgress {
		return false
	}
	for i, name := range st.names {
		if sc.version(name) != st.versions[i] {
			return true
		}
	}
	return false
}

// consult notes that an expansion looked name up. A name the file being
// followed has just noted is not noted again: every #if line consults the
// same pseudo-names, and each enclosing file's record walks what its
// subtree noted. The check stays within that file's part, which its own
// record must hold whole.
func (sc *scan) consult(name string) {
	if n := len(sc.consulted); n == sc.subtree || sc.consulted[n-1] != name {
		sc.consulted = append(sc.consulted, name)
	}
}

// record stores what a subtree consulted, each name once.
func (sc *scan) record(st *scanState, consulted []string) {
	st.inProgress = false
	for _, name := range consulted {
		if !slices.Contains(st.names, name) {
			st.names = append(st.names, name)
			st.versions = append(st.versions, sc.version(name))
		}
	}
}

// version is a name's version, including the scan's own pseudo-names.
func (sc *scan) version(name string) int {
	switch name {
	case unseenName:
		if sc.unseen {
			return 1
		}
		return 0
	case hasIncludeName:
		// What decides whether a conditional tests for a file: the
		// macros known to, and whether a paste may make such a name
		// (mayPasteFileTest), each of which only ever grows.
		v := len(sc.hasIncludeMacros) << 1
		if sc.anyPaste {
			v |= 1
		}
		return v | sc.testSpelled<<24
	}
	return sc.table.version(name)
}

// define adds a definition, and learns whether the macro tests for a file:
// its body holds __has_include, or a call of another macro that does. A
// macro defined before the one it calls is found when that one is.
func (sc *scan) define(m *macro) {
	sc.table.define(m)
	sc.learnBody(m)
	sc.learnFileTest(m)
}

// learnFileTest learns whether m tests for a file: its body holds
// __has_include, or a call of another macro that does. -D options' macros
// are learnt so too (optionOperators): -D'HI(x)=__has_include(x)' makes
// #if HI("x.h") a test for x.h.
func (sc *scan) learnFileTest(m *macro) {
	if sc.hasIncludeMacros[m.name] || !(m.hasInclude || sc.callsHasInclude(m)) {
		return
	}
	sc.hasIncludeMacros[m.name] = true
	sc.learnTestName(m.name)
	for changed := true; changed; {
		changed = false
		for name, c := range sc.table.defs {
			if sc.hasIncludeMacros[name] {
				continue
			}
			if slices.ContainsFunc(c.defs, sc.callsHasInclude) {
				sc.hasIncludeMacros[name] = true
				sc.learnTestName(name)
				changed = true
			}
		}
	}
}

// callsHasInclude reports whether m's body names a macro known to test
// for a file.
func (sc *scan) callsHasInclude(m *macro) bool {
	for _, t := range m.body {
		if t.kind == tIdent && sc.hasIncludeMacros[t.text] {
			return true
		}
	}
	return false
}

// condition follows the __has_include tests an #if or #elif expression
// makes through macros. Only an expression naming a macro that tests for
// a file is expanded; each test found is keyed like a literal one.
func (sc *scan) condition(expr, includerDir string, depth int) error {
	sc.consult(hasIncludeName)
	ts := tokenize(expr)
	pasted := sc.mayPasteFileTest(ts)
	if !pasted && !slices.ContainsFunc(ts, func(t token) bool { return t.kind == tIdent && sc.hasIncludeMacros[t.text] }) {
		return nil
	}
	ts = dropDefined(ts)
	sc.table.fallback = sc.builtinMacros
	sc.settleOperators()
	// Only the operands that name a macro testing for a file can test
	// for one, and each is expanded on its own: the names of the other
	// operands (compiler and version checks) would only multiply the
	// combinations of definitions to try, each name's value before its
	// definitions included.
	var variants [][]token
	var err error
	for _, op := range splitOperands(ts) {
		names := slices.ContainsFunc(op, func(t token) bool {
			return t.kind == tIdent && (sc.hasIncludeMacros[t.text] || isHasInclude(t.text))
		})
		if !names && !(pasted && sc.pastesIn(op)) {
			continue
		}
		// A name in a test's operand is like one in a computed
		// include's; the test itself is an operator, no macro.
		var vs [][]token
		vs, err = sc.table.expandVariants(op, func(name string) bool { return !isHasInclude(name) && sc.unknown(name) })
		if err != nil && !names && !sc.reachesTestName(op) {
			// Expanded only for the pastes it reaches, and none of them
			// can make a test's name: nothing of it tests for a file.
			err = nil
			continue
		}
		if err != nil {
			break
		}
		variants = append(variants, vs...)
	}
	if err != nil {
		sc.refuse(fmt.Sprintf("conditional %q tests for a file through macros that cannot be expanded (%v)", expr, err))
		return nil
	}
	for _, v := range variants {
		for _, d := range hasIncludes(v) {
			if d.operand != nil {
				sc.refuse(fmt.Sprintf("conditional %q tests for a file whose name is not known", expr))
				continue
			}
			if err := sc.directive(d, includerDir, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// splitOperands splits a conditional's expression at its operators
// outside parentheses that separate operands (&&, ||, ?, :, and the comma):
// macro calls never span them, since their arguments are parenthesized.
func splitOperands(ts []token) [][]token {
	var out [][]token
	depth, from := 0, 0
	for i, t := range ts {
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		case "&&", "||", "?", ":", ",":
			if depth == 0 {
				out, from = append(out, ts[from:i]), i+1
			}
		}
	}
	return append(out, ts[from:])
}

// dropDefined replaces each "defined NAME" and "defined ( NAME )" of a
// conditional with 0: the preprocessor does not expand NAME there, so it
// can name no file.
func dropDefined(ts []token) []token {
	out := make([]token, 0, len(ts))
	for i := 0; i < len(ts); i++ {
		if ts[i].kind != tIdent || ts[i].text != "defined" {
			out = append(out, ts[i])
			continue
		}
		zero := token{kind: tNumber, text: "0", space: ts[i].space}
		switch {
		case i+3 < len(ts) && ts[i+1].text == "(" && ts[i+2].kind == tIdent && ts[i+3].text == ")":
			i += 3
		case i+1 < len(ts) && ts[i+1].kind == tIdent:
			i++
		}
		out = append(out, zero)
	}
	return out
}
