package deps

import (
	"fmt"
	"slices"
	"sync"
)

// A paste (##) makes one token of its operands' spellings, and clang
// rescans what it makes: CAT(__TIMES, TAMP__), with CAT(a, b) a ## b,
// expands to the build's time stamp, and CAT(__has_, include)("x.h") in
// an #if tests for x.h, though no text names either. The scan finds the
// names a text spells whole by searching it; this file finds those a
// paste may make from pieces.
//
// A paste makes a name only if both of these hold in what the compiler
// reads (the source, its headers, the options, the built-in headers):
//
//   - a chain of ## each of whose operands is a parameter or a piece of
//     the name (a literal operand that is not a piece, such as PoCL's
//     _cl_##FUNC, puts text in every result that no later paste takes out
//     again: chainMaySpell);
//   - the name is the concatenation of two or more of its pieces, each
//     spelled as a word of its own: every token a paste joins was spelled
//     in a text, expanded from a predefined macro (predefinedWords), or
//     made by an earlier paste from such tokens. A number may be any
//     (__LINE__, __COUNTER__), so a piece that begins with a digit counts
//     as spelled; a stringized operand gives a literal, no identifier.
//
// The rule for _Pragma (scan.operators) is the weaker one on the leftmost
// piece alone; these names need no stringized operand.

// pasteTargets are the predefined macros whose expansion a key must
// follow, and so must know a text expands: the clock macros (clockMacros)
// and the macros of a file's path (fileMacros). The operators that test
// for a file (fileTests) are followed in conditionals, where the tokens a
// paste may take are known (mayPasteFileTest).
var pasteTargets = [...]string{"__TIME__", "__TIMESTAMP__", "__DATE__", "__FILE__", "__FILE_NAME__", "__BASE_FILE__", "__builtin_FILE"}

// predefinedWords are the identifiers that clang-15's predefined macros
// expand to (clang-15 -dM -E for OpenCL, C, C++ and CUDA;
// TestPredefinedWordsCoverClang): a paste through a macro that expands
// its operands first (XCAT(__FI, __INT64_C_SUFFIX__)) takes them as
// pieces no text spells.
//
// The word lists and the sets made of them are built on first use, not at
// the package's start: every process that links deps (the layer in every
// application it is loaded into among them) would otherwise build them
// before its first call, most never to paste. Only predefinedWordSet,
// made once, reads the list.
func predefinedWords() []string { return append(predefinedVectorWords(), predefinedScalarWords...) }

// predefinedScalarWords are predefinedWords less the vector types.
var predefinedScalarWords = []string{"F", "F16", "L", "LL", "U", "UL", "ULL", "X",
	"__attribute__", "__blocks__", "__int128", "__kernel", "address_space", "byref",
	"char", "double", "extern", "float", "half", "int", "long", "short", "signed",
	"unsigned", "void", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t",
	"vec_type_hint", "work_group_size_hint", "typen", "INT_MAX", "INT_MIN",
	"SCHAR_MAX", "SCHAR_MIN", "__builtin_astype", "__builtin_huge_val",
	"__builtin_huge_valf", "__builtin_inff", "clk_event_t", "reserve_id_t",
	"uchar", "uint", "ulong", "ushort"}

// predefinedWordSet holds predefinedWords.
var predefinedWordSet = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	for _, w := range predefinedWords() {
		set[w] = true
	}
	return set
})

// compilerGives reports whether a paste may take piece w from what the
// compiler makes rather than from a text: a number (__LINE__, __COUNTER__
// give any), or a word of its predefined bodies.
func compilerGives(w string) bool { return isDigit(w[0]) || predefinedWordSet()[w] }

// predefinedVectorWords are OpenCL's vector types of each scalar type,
// which clang's as_TYPEn macros expand to: char2 ... ushort16.
func predefinedVectorWords() []string {
	var words []string
	for _, s := range []string{"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float", "double"} {
		for _, n := range []string{"2", "3", "4", "8", "16"} {
			words = append(words, s+n)
		}
	}
	return words
}

// targetSet is a set of pasteTargets, one bit each by index.
type targetSet uint8

// userLabelPrefix is a predefined macro that expands to "_" on some
// targets (Mach-O, 32-bit Windows): a word no text spells.
const userLabelPrefix = "__USER_LABEL_PREFIX__"

// targetPieceSet holds every proper substring of a pasteTarget.
var targetPieceSet = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	for _, t := range pasteTargets {
		addPieces(set, t)
	}
	return set
})

// addPieces adds every proper substring of name to set.
func addPieces(set map[string]bool, name string) {
	for i := range len(name) {
		for j := i + 1; j <= len(name); j++ {
			if j-i < len(name) {
				set[name[i:j]] = true
			}
		}
	}
}

// spelledPieces gathers the pasteWords of the texts a scan (or a
// built-in headers' table) read.
type spelledPieces struct {
	all, grouped map[string]bool
	// unbalanced says a text was not balanced: its words outside
	// parentheses may be arguments after all.
	unbalanced bool
}

// add gathers w.
func (p *spelledPieces) add(w pasteWords) {
	if p.all == nil {
		p.all, p.grouped = map[string]bool{}, map[string]bool{}
	}
	for _, x := range w.all {
		p.all[x] = true
	}
	for _, x := range w.grouped {
		p.grouped[x] = true
	}
	p.unbalanced = p.unbalanced || w.unbalanced != ""
}

// addBranches gathers w as add does, and its branches that are not
// balanced as if the compiler read them all: for texts the scan reads
// without following their directives (the built-in headers).
func (p *spelledPieces) addBranches(w pasteWords) {
	p.add(w)
	p.unbalanced = p.unbalanced || len(w.branches) > 0
}

// segmentable reports whether name is the concatenation of two or more of
// its proper substrings for which spelled is true.
func segmentable(name string, spelled func(string) bool) bool {
	reach := make([]bool, len(name)+1)
	reach[0] = true
	for i := range len(name) {
		if !reach[i] {
			continue
		}
		for j := i + 1; j <= len(name); j++ {
			if j-i < len(name) && spelled(name[i:j]) {
				reach[j] = true
			}
		}
	}
	return reach[len(name)]
}

// pasteTargets returns the targets that a chain of ## in m's body may
// spell (chainMaySpell).
func (m *macro) pasteTargets() targetSet {
	var set targetSet
	for i, t := range m.body {
		if t.kind != tPunct || t.text != "##" || i == 0 {
			continue
		}
		for n, name := range pasteTargets {
			if m.chainMaySpell(i, name) {
				set |= 1 << n
			}
		}
	}
	return set
}

// pastedTargets acts on the targets that the texts and options the scan
// read, with the built-in headers, may paste: as if a text named each.
// The built-in headers are read only where the scan's own texts hold a
// chain for a target: a compiler whose own headers paste a clock macro
// into every program is not one a program's text can make so.
func (sc *scan) pastedTargets() {
	if sc.targetChains == 0 {
		return
	}
	b := sc.builtinMacros()
	chains := sc.targetChains | b.targetChains
	// Where every text is balanced, only words a paste can take count:
	// those within parentheses or on a directive's line (targetWords).
	own, built := sc.targetWords.all, b.targetWords.all
	if !sc.targetWords.unbalanced && !b.targetWords.unbalanced {
		own, built = sc.targetWords.grouped, b.targetWords.grouped
	}
	spelled := func(w string) bool { return own[w] || built[w] || compilerGives(w) }
	for i, name := range pasteTargets {
		if chains&(1<<i) == 0 || !segmentable(name, spelled) {
			continue
		}
		switch {
		case name == "__DATE__":
			sc.date = true
		case slices.Contains(fileMacros, name):
			sc.namesFiles = true
		default:
			sc.refuse(fmt.Sprintf("a macro may paste %s from words the texts spell, which no key can follow", name))
		}
	}
}

// fileTests are the operators that test for a file (isHasInclude).
var fileTests = []string{"__has_include", "__has_include_next", "__has_embed"}

// learnTestName adds name, an operator or a macro that tests for a file,
// to those a paste in a conditional may make (mayPasteFileTest).
func (sc *scan) learnTestName(name string) {
	sc.testNames = append(sc.testNames, name)
	pieces := map[string]bool{}
	addPieces(pieces, name)
	for p := range pieces {
		if _, ok := sc.testPieces[p]; !ok {
			sc.testPieces[p] = sc.bodyIdents[p]
			if sc.testPieces[p] {
				sc.testSpelled++
			}
		}
	}
}

// learnBody notes what a definition the scan made lends a paste in a
// conditional: its body's identifiers other than its parameters (the
// words such a paste may take; a parameter's come from the call) and
// whether it pastes at all.
func (sc *scan) learnBody(m *macro) {
	pastes := bodyWords(m, func(w string) {
		sc.bodyIdents[w] = true
		if spelled, ok := sc.testPieces[w]; ok && !spelled {
			sc.testPieces[w] = true
			sc.testSpelled++
		}
	})
	sc.anyPaste = sc.anyPaste || pastes
}

// bodyWords calls word with each identifier and number of m's body that is
// no parameter of m, and reports whether the body pastes.
func bodyWords(m *macro, word func(string)) (pastes bool) {
	for _, t := range m.body {
		switch {
		case (t.kind == tIdent || t.kind == tNumber) && m.param(t) < 0:
			word(t.text)
		case t.kind == tPunct && t.text == "##":
			pastes = true
		}
	}
	return pastes
}

// learnBodies notes, for a built-in headers' table, the identifiers of
// its definitions' bodies and whether one pastes.
func (t *macroTable) learnBodies() {
	t.bodyIdents = map[string]bool{}
	for _, c := range t.defs {
		for _, m := range c.defs {
			pastes := bodyWords(m, func(w string) { t.bodyIdents[w] = true })
			t.anyPaste = t.anyPaste || pastes
		}
	}
}

// mayPasteFileTest reports whether the expansion of a conditional's
// tokens ts may paste the name of an operator that tests for a file, or
// of a macro known to test for one: a macro pastes, and the name is the
// concatenation of words that ts or the macros' bodies spell (no other
// token enters a conditional's expansion). Such a conditional's operands
// are expanded wherever they reach a paste (pastesIn), not only where they
// name a test (condition).
//
// The built-in headers are read only where the scan's own definitions
// paste: a compiler whose own headers paste a test for a file, through
// macros a program calls, is not modelled.
func (sc *scan) mayPasteFileTest(ts []token) bool {
	if !sc.anyPaste {
		return false
	}
	own := slices.ContainsFunc(ts, func(t token) bool {
		_, ok := sc.testPieces[t.text]
		return (t.kind == tIdent || t.kind == tNumber) && ok
	})
	// The answer without pieces of ts holds while no piece and no name
	// is learnt.
	state := [2]int{sc.testSpelled, len(sc.testNames)}
	if !own && sc.testCacheFor == state {
		return sc.testCache
	}
	b := sc.builtinMacros()
	spelled := func(w string) bool {
		return compilerGives(w) || sc.testPieces[w] || b.bodyIdents[w] ||
			(own && slices.ContainsFunc(ts, func(t token) bool { return t.text == w }))
	}
	may := slices.ContainsFunc(sc.testNames, func(name string) bool { return segmentable(name, spelled) })
	if !own {
		sc.testCache, sc.testCacheFor = may, state
	}
	return may
}

// pastesIn reports whether expanding op may paste: a macro its names
// reach (reachBodies) pastes. A paste makes a name only once one has run,
// so an operand that reaches none expands to no name it does not spell.
// The compiler's own predefined macros paste nothing (clang-15's -dM holds
// no ##).
func (sc *scan) pastesIn(op []token) bool {
	return sc.reachBodies(identNames(op), map[string]bool{}, func(t token) bool {
		return t.kind == tPunct && t.text == "##"
	})
}

// reachesTestName reports whether the expansion of op may make the name
// of a test for a file, for an operand whose expansion cannot be followed
// (a macro only the compiler knows): the name is one op's names reach, or
// a concatenation of the words they reach (predefinedWords and any number
// among them). A name so made may be a macro's, whose body then counts as
// reached too, until no more names can be made.
func (sc *scan) reachesTestName(op []token) bool {
	b := sc.builtinMacros()
	reached := map[string]bool{}
	for _, t := range op {
		if t.kind == tNumber {
			reached[t.text] = true
		}
	}
	number := func(t token) bool {
		if t.kind == tNumber {
			reached[t.text] = true
		}
		return false
	}
	spelled := func(w string) bool { return compilerGives(w) || reached[w] }
	for names := identNames(op); ; {
		sc.reachBodies(names, reached, number)
		if slices.ContainsFunc(sc.testNames, func(n string) bool { return reached[n] || segmentable(n, spelled) }) {
			return true
		}
		names = nil
		for _, defs := range []map[string]*candidates{sc.table.defs, b.defs} {
			for name := range defs {
				if !reached[name] && segmentable(name, spelled) {
					names = append(names, name)
				}
			}
		}
		if len(names) == 0 {
			return false
		}
	}
}

// identNames returns the identifiers of ts.
func identNames(ts []token) []string {
	var names []string
	for _, t := range ts {
		if t.kind == tIdent {
			names = append(names, t.text)
		}
	}
	return names
}

// reachBodies walks from names through every candidate definition's body
// (the scan's and the built-in headers'), each identifier of a body a name
// to walk from in turn, and seen marking those walked; it calls visit with
// each body's tokens and stops, reporting true, where visit does. Each
// name is consulted, so that a memo of the subtree changes with its
// definitions.
func (sc *scan) reachBodies(names []string, seen map[string]bool, visit func(token) bool) bool {
	b := sc.builtinMacros()
	var queue []string
	push := func(name string) {
		if !seen[name] {
			seen[name] = true
			queue = append(queue, name)
		}
	}
	for _, n := range names {
		push(n)
	}
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		sc.consult(name)
		for _, c := range []*candidates{sc.table.defs[name], b.defs[name]} {
			if c == nil {
				continue
			}
			for _, m := range c.defs {
				if m == nil {
					continue
				}
				for _, t := range m.body {
					if visit(t) {
						return true
					}
					if t.kind == tIdent {
						push(t.text)
					}
				}
			}
		}
	}
	return false
}
