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
type macroTable struct {
	defs map[string]*candidates
	// consulted, when set, is told every name an expansion looks up, so
	// a scan knows which names its computed includes depended on.
	consulted func(name string)
	// fallback returns the macros of the compiler's built-in headers,
	// each a candidate beside "undefined" for a name defined nowhere
	// else; nil for none.
	fallback func() *macroTable
}

// candidates are the definitions a name may have; undef says it may also
// be undefined (an #undef or -U was seen).
type candidates struct {
	defs  []*macro
	undef bool
}

func newMacroTable() *macroTable { return &macroTable{defs: map[string]*candidates{}} }

// define adds a candidate definition.
func (t *macroTable) define(m *macro) {
	c := t.defs[m.name]
	if c == nil {
		c = &candidates{}
		t.defs[m.name] = c
	}
	if slices.ContainsFunc(c.defs, m.same) {
		return
	}
	c.defs = append(c.defs, m)
}

// undef records that name may be undefined from here on.
func (t *macroTable) undef(name string) {
	c := t.defs[name]
	if c == nil {
		// Undefining an unknown name makes it known to be undefined,
		// which is what lets an expansion trust it.
		t.defs[name] = &candidates{undef: true}
		return
	}
	c.undef = true
}

// version counts the candidates of name: definitions only ever join a
// name's candidates, so an unchanged version means an unchanged set.
func (t *macroTable) version(name string) int {
	c := t.defs[name]
	if c == nil {
		return 0
	}
	v := 2 * len(c.defs)
	if c.undef {
		v++
	}
	return v + 1
}

// applyOptions applies -D and -U options in order. Options are not
// branches: a later one replaces an earlier one exactly.
func (t *macroTable) applyOptions(opts []optMacro) {
	for _, o := range opts {
		name, value, hasValue := strings.Cut(o.text, "=")
		if !o.define {
			t.defs[strings.TrimSpace(name)] = &candidates{undef: true}
			continue
		}
		if !hasValue {
			value = "1"
		}
		m := parseDefine(name + " " + value)
		if m == nil {
			continue // the compiler rejects it too
		}
		t.defs[m.name] = &candidates{defs: []*macro{m}}
	}
}

// options returns the candidates of name: its definitions, plus nil for
// "undefined" when it may be undefined. known is false for a name neither
// defined nor undefined anywhere the scan saw.
func (t *macroTable) options(name string) (opts []*macro, known bool) {
	if t.consulted != nil {
		t.consulted(name)
	}
	c := t.defs[name]
	if c == nil && t.fallback != nil {
		if b := t.fallback().defs[name]; b != nil {
			c = &candidates{defs: b.defs, undef: true}
		}
	}
	if c == nil {
		return nil, false
	}
	opts = c.defs
	if c.undef {
		opts = append(slices.Clip(opts), nil)
	}
	return opts, true
}

// builtinTable keeps the macro table of one set of built-in headers, by
// their paths and digests. A table is never written once built, so scans
// share it.
type builtinTable struct {
	mu    sync.Mutex
	key   string      // guarded by mu
	table *macroTable // guarded by mu
}

// get returns the table for key, building it when key changed. A key made
// of files too recent to trust is built but not kept.
func (b *builtinTable) get(key string, keep bool, build func() *macroTable) *macroTable {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.table != nil && b.key == key {
		return b.table
	}
	t := build()
	if keep {
		b.key, b.table = key, t
	}
	return t
}
