package deps

import (
	"slices"
	"strings"
	"sync"
)

// macro is one macro definition.
type macro struct {
	name     string
	funcLike bool
	params   []string // a variadic macro's last parameter is its __VA_ARGS__ name
	variadic bool
	body     []token
	// vaOpt marks a body using __VA_OPT__, which the expander does not
	// implement: expanding it makes the include unknowable.
	vaOpt bool
	// hasInclude marks a body holding __has_include, __has_include_next
	// or __has_embed: a conditional that expands the macro tests for a
	// file, whose name may come from the call's arguments.
	hasInclude bool
}

// pragmaOperator is the operator through which a text may run a pragma
// (pop_macro among them) that no text of it names, when its name is
// pasted from pieces and its string stringized from pieces.
const pragmaOperator = "_Pragma"

// restoreOperators reports what m's body can lend to such a hidden
// _Pragma: a paste that may spell the operator's name (every operand of
// one chain of ## a parameter or a piece of the word: a literal operand
// that is not, such as PoCL's _cl_##FUNC, puts text in every result that
// no paste can take out again), and the stringizing of a parameter (its
// string).
func (m *macro) restoreOperators() (pastes, stringizes bool) {
	body := m.body
	for i := 0; i < len(body); i++ {
		t := body[i]
		if t.kind != tPunct {
			continue
		}
		switch {
		case t.text == "#" && m.funcLike && i+1 < len(body) && m.param(body[i+1]) >= 0:
			stringizes = true
		case t.text == "##" && i > 0 && !pastes:
			pastes = m.pastesPragma(i)
		}
	}
	return pastes, stringizes
}

// spellsPragmaPiece reports whether m's body spells a piece that a paste
// can begin the name _Pragma with (holdsPragmaPiece), for a definition no
// file holds (an option's): a file's text is searched whole.
func (m *macro) spellsPragmaPiece() bool {
	return slices.ContainsFunc(m.body, func(t token) bool { return holdsPragmaPiece(t.text) })
}

// holdsPragmaPiece reports whether text spells, as an identifier of its
// own, a piece that a paste can begin the name _Pragma with: "_", "_P",
// "_Pr", "_Pra", "_Prag" or "_Pragm" (or the name itself). A paste makes
// one token of its operands' spellings, so the leftmost operand of a
// paste that makes _Pragma is such a piece, spelled in some text or made
// by an earlier paste from a shorter one: a program that spells none
// pastes no _Pragma. The text is searched, not its tokens, and only a
// letter, a digit or an underscore is taken to continue an identifier,
// so a piece in a comment or a literal, or beside a character clang may
// read as part of an identifier ($, a UTF-8 letter), costs a needless
// refusal at most, never a paste missed.
func holdsPragmaPiece[T string | []byte](text T) bool {
	for i := 0; i < len(text); i++ {
		if text[i] != '_' || (i > 0 && continuesWord(text[i-1])) {
			continue
		}
		n := 1
		for n < len(pragmaOperator) && i+n < len(text) && text[i+n] == pragmaOperator[n] {
			n++
		}
		if i+n == len(text) || !continuesWord(text[i+n]) {
			return true
		}
	}
	return false
}

// continuesWord reports whether c, beside an identifier, is surely part
// of it in every lexing of C: a letter, a digit or an underscore.
func continuesWord(c byte) bool {
	return c == '_' || isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// pastesPragma reports whether the chain of ## around body[at] may spell
// pragmaOperator.
func (m *macro) pastesPragma(at int) bool { return m.chainMaySpell(at, pragmaOperator) }

// chainMaySpell reports whether the chain of ## around body[at] may spell
// word: each of its operands a parameter or a piece of the word.
func (m *macro) chainMaySpell(at int, word string) bool {
	if m.vaOpt {
		// An operand may be __VA_OPT__(...), whose tokens are the
		// call's: a ## __VA_OPT__(b) pastes a and b.
		return true
	}
	body := m.body
	start, end := at-1, at+1
	for start >= 2 && body[start-1].kind == tPunct && body[start-1].text == "##" {
		start -= 2
	}
	for end+2 < len(body) && body[end+1].kind == tPunct && body[end+1].text == "##" {
		end += 2
	}
	for i := start; i <= end && i < len(body); i += 2 {
		if t := body[i]; m.param(t) < 0 && !strings.Contains(word, t.text) {
			return false
		}
	}
	return true
}

// isHasInclude reports whether an identifier tests for a file in a
// conditional.
func isHasInclude(name string) bool {
	return name == "__has_include" || name == "__has_include_next" || name == "__has_embed"
}

// literalHasIncludes returns a dHasInclude directive for each literal
// operand of a __has_include in m's body.
func (m *macro) literalHasIncludes() []directive {
	if !m.hasInclude {
		return nil
	}
	var out []directive
	for _, d := range hasIncludes(m.body) {
		if d.operand == nil {
			out = append(out, d)
		}
	}
	return out
}

// parseDefine parses the text after #define (or NAME[(params)]=VALUE of a
// -D option, with the '=' turned into a blank by the caller); nil if it is
// malformed, as the compiler would reject it.
func parseDefine(rest string) *macro {
	rest = strings.TrimLeft(rest, " \t\r\v\f")
	ts := tokenize(rest)
	if len(ts) == 0 || ts[0].kind != tIdent {
		return nil
	}
	m := &macro{name: ts[0].text}
	body := ts[1:]
	if len(body) > 0 && body[0].text == "(" && !body[0].space {
		m.funcLike = true
		n, ok := m.parseParams(body)
		if !ok {
			return nil
		}
		body = body[n:]
	}
	m.body = slices.Clone(body)
	if len(m.body) > 0 {
		m.body[0].space = false
	}
	for _, t := range m.body {
		m.vaOpt = m.vaOpt || t.text == "__VA_OPT__"
		m.hasInclude = m.hasInclude || isHasInclude(t.text)
	}
	return m
}

// parseParams reads "(a, b, ...)" at ts and returns how many tokens it
// used.
func (m *macro) parseParams(ts []token) (int, bool) {
	for i := 1; i < len(ts); i++ {
		t := ts[i]
		switch {
		case t.text == ")" && len(m.params) == 0 && i == 1:
			return i + 1, true
		case t.text == "...":
			m.params, m.variadic = append(m.params, "__VA_ARGS__"), true
			return closeParams(ts, i+1)
		case t.kind == tIdent:
			m.params = append(m.params, t.text)
			if i+1 < len(ts) && ts[i+1].text == "..." {
				m.variadic = true
				return closeParams(ts, i+2)
			}
			if i+1 < len(ts) && ts[i+1].text == ")" {
				return i + 2, true
			}
			if i+1 >= len(ts) || ts[i+1].text != "," {
				return 0, false
			}
			i++
		default:
			return 0, false
		}
	}
	return 0, false
}

func closeParams(ts []token, i int) (int, bool) {
	if i < len(ts) && ts[i].text == ")" {
		return i + 1, true
	}
	return 0, false
}

// param returns the index of parameter name, or -1.
func (m *macro) param(t token) int {
	if !m.funcLike || t.kind != tIdent {
		return -1
	}
	return slices.Index(m.params, t.text)
}

// same reports whether two definitions are identical, so that a header
// included many times, or a guard defined in several branches, does not
// multiply the candidate expansions.
func (m *macro) same(o *macro) bool {
	if m.funcLike != o.funcLike || m.variadic != o.variadic || !slices.Equal(m.params, o.params) || len(m.body) != len(o.body) {
		return false
	}
	for i := range m.body {
		if m.body[i].text != o.body[i].text || (i > 0 && m.body[i].space != o.body[i].space) {
			return false
		}
	}
	return true
}

// macroTable holds every definition a macro may have at a point of the
// scan. Since every branch of a conditional is taken as live, a name may
// have several candidate definitions, and may also be undefined; the
// expander tries each combination.
//
// A definition inside a branch may not have been made at all: then the
// name still has the value it had before, which is the compiler's own
// (a predefined macro, or none) when the scan saw nothing earlier. So a
// name keeps its prior state as a candidate at every point that no
// definition or #undef of it dominates: one made in a branch that
// encloses the point, earlier, so that reaching the point means having
// made it (the branches open there; see enter, next and leave).
type macroTable struct {
	defs map[string]*candidates
	// consulted, when set, is told every name an expansion looks up, so
	// a scan knows which names its computed includes depended on.
	consulted func(name string)
	// fallback returns the macros of the compiler's built-in headers,
	// each a candidate beside "undefined" for a name defined nowhere
	// else; nil for none.
	fallback func() *macroTable
	// open holds the branches open at the point of the scan, outermost
	// first. Branch ids only grow, so it is sorted.
	open   []int
	chains []chain // one per open branch
	last   int     // the last branch id given out; 0 is outside every conditional
	// early says the scan is in a -include or -imacros file: clang reads
	// them before the built-in headers (PoCL includes its own after the
	// build's), so a built-in definition may replace one made there.
	early bool
	// uncertain says a file read may restore a macro to an earlier state
	// (#pragma pop_macro): no definition or #undef dominates any more.
	uncertain bool
	// pastesPragma, stringizes and pragmaPiece say the files of a
	// built-in headers' table hold the parts of a _Pragma no text names
	// (parsedFile's, taken once when the table is made, which scans then
	// share).
	pastesPragma, stringizes, pragmaPiece bool
	// restores says those files hold a restoreMark: a macro of theirs
	// that the text expands may run a pop_macro no text names.
	restores bool
	// targetChains and targetWords are the halves of a pasted target
	// (paste.go) that a built-in headers' table's files hold; anyPaste
	// says one of its macros pastes, and bodyIdents holds the identifiers
	// of its macros' bodies (mayPasteFileTest). Taken once when the table
	// is made.
	targetChains targetSet
	targetWords  spelledPieces
	anyPaste     bool
	bodyIdents   map[string]bool
}

// candidates are the definitions a name may have; undef says it may also
// be undefined (an #undef or -U was seen).
type candidates struct {
	defs  []*macro
	undef bool
	// at holds the branches its definitions and #undefs were made in,
	// each once (0 for outside every conditional, and for options).
	at []int
	// option says a -D or -U option set the name: before any text, and
	// so before any push_macro a pop could return to.
	option bool
	// early says an option or a -include file set the name: before the
	// built-in headers, whose definitions may replace it.
	early bool
}

func newMacroTable() *macroTable { return &macroTable{defs: map[string]*candidates{}} }

// chain is one conditional open at the point of the scan: its branches'
// ids so far, whether it has an #else, and the names its branches define
// or undefine. A name defined or undefined in every branch of a chain with
// an #else certainly was once the chain is over.
type chain struct {
	branches []int
	complete bool
	names    []string
}

// enter opens the first branch of a conditional. A branch certainly
// taken (an #ifndef of a name certainly undefined: an include guard, the
// first time) is no branch: what it does is as certain as what its
// enclosing branch does.
func (t *macroTable) enter(taken bool) {
	b := t.branch()
	if !taken {
		t.last++
		b = t.last
	}
	t.open = append(t.open, b)
	t.chains = append(t.chains, chain{branches: []int{b}})
}

// undefined reports whether name is certainly not a macro here, as far as
// the table knows: no option, definition or #undef of it was seen, and
// the built-in headers do not define it. The caller adds whether the
// compiler may predefine it.
func (t *macroTable) undefined(name string, builtins *macroTable) bool {
	if t.consulted != nil {
		t.consulted(name)
	}
	return t.defs[name] == nil && (builtins == nil || builtins.defs[name] == nil)
}

// next moves to the next branch of the innermost conditional (an #else
// when last), unless the file at base has none open (an #else without
// #if, which the compiler rejects).
func (t *macroTable) next(base int, last bool) {
	if len(t.open) > base {
		t.last++
		t.open[len(t.open)-1] = t.last
		c := &t.chains[len(t.chains)-1]
		c.branches, c.complete = append(c.branches, t.last), last
	}
}

// leave closes the innermost conditional opened since base. What every
// branch of a complete chain did is then certain in the enclosing branch.
func (t *macroTable) leave(base int) {
	if len(t.open) <= base {
		return
	}
	c := t.chains[len(t.chains)-1]
	t.open, t.chains = t.open[:len(t.open)-1], t.chains[:len(t.chains)-1]
	if !c.complete {
		return
	}
	for _, name := range c.names {
		if d := t.defs[name]; !slices.ContainsFunc(c.branches, func(b int) bool { return !slices.Contains(d.at, b) }) {
			t.entry(name)
		}
	}
}

// close closes every conditional opened since base, at the end of a
// file: the compiler rejects a conditional left open, and one closed too
// often closes nothing of its includer's.
func (t *macroTable) close(base int) {
	t.open, t.chains = t.open[:base], t.chains[:base]
}

// branch is the innermost branch open at this point.
func (t *macroTable) branch() int {
	if len(t.open) == 0 {
		return 0
	}
	return t.open[len(t.open)-1]
}

// entry returns name's candidates, making them, and notes that the
// current branch defines or undefines it.
func (t *macroTable) entry(name string) *candidates {
	c := t.defs[name]
	if c == nil {
		c = &candidates{}
		t.defs[name] = c
	}
	if b := t.branch(); !slices.Contains(c.at, b) {
		c.at = append(c.at, b)
	}
	c.early = c.early || t.early
	if n := len(t.chains); n > 0 && !slices.Contains(t.chains[n-1].names, name) {
		t.chains[n-1].names = append(t.chains[n-1].names, name)
	}
	return c
}

// define adds a candidate definition.
func (t *macroTable) define(m *macro) {
	c := t.entry(m.name)
	if slices.ContainsFunc(c.defs, m.same) {
		return
	}
	c.defs = append(c.defs, m)
}

// undef records that name may be undefined from here on. Where it
// dominates, undefining a name the compiler may predefine makes it known
// to be undefined, which is what lets an expansion trust it.
func (t *macroTable) undef(name string) {
	t.entry(name).undef = true
}

// dominated reports whether a definition or #undef of c was certainly
// made before this point, and stands: one made outside every conditional,
// or in a branch still open here, where nothing may have popped it.
func (t *macroTable) dominated(c *candidates) bool {
	if t.uncertain {
		// A pop returns a name to its state at a push, which the text
		// made after the options: a state the table holds, never the
		// compiler's own value from before an option. (hashcat's
		// -D INCLUDE_PATH=... names every file its kernels include.)
		return c.option
	}
	for _, b := range c.at {
		if _, open := slices.BinarySearch(t.open, b); b == 0 || open {
			return true
		}
	}
	return false
}

// version counts the candidates of name, and whether its prior state
// still holds here: definitions only ever join a name's candidates, so
// an unchanged version means an unchanged set.
func (t *macroTable) version(name string) int {
	c := t.defs[name]
	if c == nil {
		return 0
	}
	v := 2 * len(c.defs)
	if c.undef {
		v++
	}
	v = 2*v + 1
	if !t.dominated(c) {
		v++
	}
	v *= 2
	if c.early {
		v++ // the built-in headers' definitions join its candidates
	}
	return v
}

// applyOptions applies -D and -U options in order. Options are not
// branches: a later one replaces an earlier one exactly. An option for a
// name overridden says (one the compiler may define after the options)
// decides nothing: the name is left as the compiler's, and the option's
// definition is returned, for what it lends a hidden _Pragma. decided
// lists, in the options' order, the names an option did decide.
func (t *macroTable) applyOptions(opts []optMacro, overridden func(name string) bool) (decided []string, skipped []*macro) {
	for _, o := range opts {
		if !o.define {
			// clang writes "#undef TEXT", which undefines TEXT's
			// first token: -U"H junk" undefines H.
			ts := tokenize(o.text)
			if len(ts) == 0 || ts[0].kind != tIdent {
				continue // the compiler rejects it too
			}
			name := ts[0].text
			if overridden != nil && overridden(name) {
				delete(t.defs, name)
				continue
			}
			t.defs[name] = &candidates{undef: true, at: []int{0}, option: true}
			decided = append(decided, name)
			continue
		}
		m := parseDefine(defineLine(o.text))
		if m == nil {
			continue // the compiler rejects it too
		}
		if overridden != nil && overridden(m.name) {
			delete(t.defs, m.name)
			skipped = append(skipped, m)
			continue
		}
		t.defs[m.name] = &candidates{defs: []*macro{m}, at: []int{0}, option: true}
		decided = append(decided, m.name)
	}
	return decided, skipped
}

// defineLine returns what clang's #define line for option -D text holds
// after "#define ": NAME BODY, with BODY 1 where text has no '=', and cut
// at its first line break (clang-15's DefineBuiltinMacro, which warns that
// the text after the newline is ignored, as GCC's -D does). A break
// elsewhere in an option has no such cut (lineBreakUnsure).
func defineLine(text string) string {
	name, body, hasBody := strings.Cut(text, "=")
	if !hasBody {
		return name + " 1"
	}
	if i := strings.IndexAny(body, "\n\r"); i >= 0 {
		body = body[:i]
	}
	return name + " " + body
}

// options returns the candidates of name: its definitions, plus nil for
// "undefined" when it may be undefined. known is false for a name neither
// defined nor undefined anywhere the scan saw. prior is true when the
// name may also still have the compiler's own value here: no definition
// the scan saw dominates this point (see macroTable), and the built-in
// headers do not define it; the caller decides whether the compiler may
// predefine it.
func (t *macroTable) options(name string) (opts []*macro, known, prior bool) {
	if t.consulted != nil {
		t.consulted(name)
	}
	c := t.defs[name]
	dominated := c != nil && t.dominated(c)
	var builtin *candidates
	if t.fallback != nil && (!dominated || c.option || c.early) {
		// The built-in headers come after the options and the -include
		// files: a definition of theirs replaces one made there.
		builtin = t.fallback().defs[name]
	}
	switch {
	case c == nil && builtin == nil:
		return nil, false, false
	case c == nil:
		return append(slices.Clip(builtin.defs), nil), true, false
	}
	opts = c.defs
	switch {
	case dominated:
		if (c.option || c.early) && builtin != nil {
			opts = append(slices.Clip(opts), builtin.defs...)
			if builtin.undef {
				opts = append(opts, nil)
			}
		}
		if c.undef {
			opts = append(slices.Clip(opts), nil)
		}
		return opts, true, false
	case builtin != nil:
		// Before the scan's definitions: the built-in headers' or none.
		return append(append(slices.Clip(opts), builtin.defs...), nil), true, false
	}
	return append(slices.Clip(opts), nil), true, true
}

// builtinValue keeps one value made from a set of built-in headers (their
// macro table, their text), under a key naming the files it was made
// from. A value is never written once made, so scans share it.
type builtinValue[T any] struct {
	mu  sync.Mutex // held while a value is made: concurrent scans wait for one
	key string     // guarded by mu
	val T          // guarded by mu
	ok  bool       // guarded by mu: val is kept
}

// get returns the value for key, making it when key changed. A value made
// of files too recent to trust (keep false), or that make failed to make,
// is not kept.
func (b *builtinValue[T]) get(key string, keep bool, make func() (T, bool)) (T, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ok && b.key == key {
		return b.val, true
	}
	v, ok := make()
	if ok && keep {
		b.key, b.val, b.ok = key, v, true
	}
	return v, ok
}
