package deps

import (
	"errors"
	"slices"
	"strings"
)

// Bounds of expansion. Real computed includes expand in a few dozen steps
// through two or three candidate definitions; past these bounds the
// include is treated as unknowable and the source is refused.
const (
	// maxExpandSteps bounds the tokens the expansions of one include may
	// process together, so a macro that grows without end stops.
	maxExpandSteps = 100_000
	// maxExpandTokens bounds the length of a sequence being expanded: a
	// header name is a few tokens, and each step copies the sequence.
	maxExpandTokens = 4096
	// maxVariants bounds the combinations of candidate definitions tried
	// for one include.
	maxVariants = 256
)

var (
	// errUnknowable reports an expansion whose result depends on
	// something the scan cannot see.
	errUnknowable = errors.New("unknowable expansion")
	// errInvalid reports an expansion the compiler would reject (an
	// unterminated macro call): no dependency can come of it.
	errInvalid = errors.New("invalid expansion")
)

// needChoice asks the variant driver to pick one of a macro's candidate
// definitions before expansion can go on.
type needChoice struct{ name string }

func (needChoice) Error() string { return "macro has several definitions" }

// expander expands one token sequence under one choice of definition per
// macro name: within one expansion the compiler sees exactly one
// definition of each name.
type expander struct {
	table  *macroTable
	choice map[string]int // index into the name's options
	steps  *int           // shared by every variant of one include
	// suspicious says whether a name could be a macro the compiler
	// knows (a built-in, or one from a header the scan did not find):
	// asked of a name nobody defined, and of one whose value before the
	// scanned files' definitions of it still holds where none of them is
	// certain (see macroTable.options).
	suspicious func(name string) bool
}

// expandVariants expands ts under every combination of candidate
// definitions and returns each distinct result. A variant the compiler
// would reject is dropped: on that path the build fails and nothing is
// cached. It returns errUnknowable if any variant depends on a macro it
// cannot see, or if there are too many variants.
func (t *macroTable) expandVariants(ts []token, suspicious func(string) bool) ([][]token, error) {
	var out [][]token
	steps := 0
	queue := []map[string]int{{}}
	for runs := 0; len(queue) > 0; runs++ {
		if runs >= maxVariants {
			return nil, errUnknowable
		}
		choice := queue[0]
		queue = queue[1:]
		x := &expander{table: t, choice: choice, steps: &steps, suspicious: suspicious}
		res, err := x.expand(slices.Clone(ts), ownTokens(ts))
		var nc needChoice
		switch {
		case errors.As(err, &nc):
			opts, _, _ := t.options(nc.name)
			for i := range opts {
				c := make(map[string]int, len(choice)+1)
				for k, v := range choice {
					c[k] = v
				}
				c[nc.name] = i
				queue = append(queue, c)
			}
		case errors.Is(err, errInvalid):
		case err != nil:
			return nil, err
		default:
			if !slices.ContainsFunc(out, func(o []token) bool { return sameTokens(o, res) }) {
				out = append(out, res)
			}
		}
	}
	return out, nil
}

func sameTokens(a, b []token) bool {
	return slices.EqualFunc(a, b, func(x, y token) bool { return x.text == y.text && x.space == y.space })
}

// lookup returns the definition name has under the current choice, nil if
// it is not a macro here.
func (x *expander) lookup(name string) (*macro, error) {
	opts, known, prior := x.table.options(name)
	if (!known || prior) && x.suspicious(name) {
		return nil, errUnknowable
	}
	if !known {
		return nil, nil
	}
	switch len(opts) {
	case 0:
		return nil, nil
	case 1:
		return opts[0], nil
	}
	i, ok := x.choice[name]
	if !ok {
		return nil, needChoice{name}
	}
	return opts[i], nil
}

// expand fully macro-expands ts (C11 6.10.3, with hide sets as in
// Prosser's algorithm). The last own tokens of ts are a directive's own
// operand, lexed as a file name (tokenizeFileName): those still unread
// once the first token is out are lexed again the usual way, as clang
// lexes them.
func (x *expander) expand(ts []token, own int) ([]token, error) {
	var out []token
	for len(ts) > 0 {
		if *x.steps++; *x.steps > maxExpandSteps || len(ts)+len(out) > maxExpandTokens {
			return nil, errUnknowable
		}
		t := ts[0]
		m, err := x.invoked(ts)
		if err != nil {
			return nil, err
		}
		if m == nil {
			if t.kind == tIdent && slices.Contains(t.hide, t.text) {
				t.noexp = true
			}
			out, ts = append(out, t), ts[1:]
			if own = min(own, len(ts)); own > 0 {
				ts, own = relexed(ts, own), 0
			}
			continue
		}
		var body []token
		var gap bool
		if !m.funcLike {
			body, gap, err = x.subst(m, call{}, union(t.hide, m.name))
			ts = ts[1:]
		} else {
			var c call
			var rparen token
			c, rparen, ts, err = collectArgs(m, ts[2:])
			if err != nil {
				return nil, err
			}
			body, gap, err = x.subst(m, c, union(intersect(t.hide, rparen.hide), m.name))
		}
		if err != nil {
			return nil, err
		}
		own = min(own, len(ts))
		// An expansion to nothing passes the blank before it on to the
		// token after it (Preprocessor::HandleMacroExpandedIdentifier),
		// as does an empty argument that ends the expansion.
		gap = gap || (len(body) == 0 && t.space)
		if gap && len(ts) > 0 {
			ts[0].space = true
		}
		if len(body) > 0 {
			body[0].space = t.space
			ts = append(body, ts...)
		}
	}
	return out, nil
}

// invoked returns the macro that ts[0] calls, nil if it calls none: it
// names no macro, is painted or in its own hide set, or is a function-like
// macro's name without a '(' after it.
func (x *expander) invoked(ts []token) (*macro, error) {
	t := ts[0]
	if t.kind != tIdent || t.noexp || slices.Contains(t.hide, t.text) {
		return nil, nil
	}
	m, err := x.lookup(t.text)
	if err != nil || m == nil {
		return nil, err
	}
	if m.funcLike && (len(ts) < 2 || ts[1].text != "(") {
		return nil, nil
	}
	if m.vaOpt {
		return nil, errUnknowable
	}
	return m, nil
}

// ownTokens returns how many tokens at the end of ts are a directive's
// own, lexed as a file name.
func ownTokens(ts []token) int {
	n := 0
	for n < len(ts) && ts[len(ts)-1-n].rest != "" {
		n++
	}
	return n
}

// relexed returns ts with its last n tokens, a directive's own not yet
// read, lexed again the usual way: clang lexes an include's operand as a
// file name only until the expansion gives it a first token.
func relexed(ts []token, n int) []token {
	first := ts[len(ts)-n]
	again := tokenize(first.rest)
	if len(again) > 0 {
		again[0].space = again[0].space || first.space
	}
	return append(ts[:len(ts)-n:len(ts)-n], again...)
}

// call is the arguments of one call of a function-like macro.
type call struct {
	args [][]token
	// elided says the variable arguments were left out: F(a) for
	// F(x, ...), or F() for F(...). A ## between a comma and them then
	// removes the comma (GNU's extension).
	elided bool
}

// collectArgs reads a macro call's arguments after its '(' and returns
// them, the closing ')' and the tokens after it.
func collectArgs(m *macro, ts []token) (c call, rparen token, rest []token, err error) {
	depth := 0
	var cur []token
	for i, t := range ts {
		switch {
		case t.text == "(":
			depth++
		case t.text == ")" && depth > 0:
			depth--
		case t.text == ")":
			c, err = fitArgs(m, append(c.args, cur))
			return c, t, ts[i+1:], err
		case t.text == "," && depth == 0 && !(m.variadic && len(c.args) == len(m.params)-1):
			c.args, cur = append(c.args, cur), nil
			continue
		}
		cur = append(cur, t)
	}
	return call{}, token{}, nil, errInvalid
}

// fitArgs checks the argument count against the parameters.
func fitArgs(m *macro, args [][]token) (call, error) {
	switch {
	case len(m.params) == 0 && len(args) == 1 && len(args[0]) == 0:
		return call{}, nil
	case m.variadic && len(args) == len(m.params)-1:
		return call{args: append(args, nil), elided: true}, nil
	case len(args) != len(m.params):
		return call{}, errInvalid
	}
	return call{args: args, elided: m.variadic && len(args) == 1 && len(args[0]) == 0}, nil
}

// subst returns m's body with its parameters replaced (C11 6.10.3.1-3):
// an argument after # is stringified, one next to ## is pasted as
// written, any other is fully expanded first. Every resulting token gets
// the hide set hs. An argument that comes to nothing passes its blank on
// to the token after it, as clang does (TokenLexer's NextTokGetsSpace);
// gap says one ends the body, and passes it on past the expansion.
func (x *expander) subst(m *macro, c call, hs []string) (out []token, gap bool, err error) {
	body := m.body
	for i := 0; i < len(body); i++ {
		b := body[i]
		if b.text == "##" && b.kind == tPunct && len(out) > 0 && i+1 < len(body) {
			i++
			p := m.param(body[i])
			if elidesComma(m, c, p, out) {
				if len(m.params) == 1 {
					// clang keeps the comma of F(...) where it lexes
					// C without GNU's extensions (OpenCL C), which the
					// scan cannot tell.
					return nil, false, errUnknowable
				}
				out, gap = out[:len(out)-1], false
				continue
			}
			rhs := []token{body[i]}
			if p >= 0 {
				rhs = placemark(c.args[p])
			}
			out = paste(out, rhs)
			continue
		}
		add, err := x.substOne(m, c.args, &i)
		if err != nil {
			return nil, false, err
		}
		if len(add) == 0 {
			gap = gap || b.space
			continue
		}
		add[0].space = add[0].space || gap
		gap = false
		out = append(out, add...)
	}
	out, end := dropPlacemarkers(out)
	for i := range out {
		out[i].hide = union(out[i].hide, hs...)
	}
	return out, gap || end, nil
}

// elidesComma reports whether a ## before parameter p of m removes the
// comma that ends out: p is the variable arguments, left out of call c.
func elidesComma(m *macro, c call, p int, out []token) bool {
	return c.elided && p == len(m.params)-1 && out[len(out)-1].text == ","
}

// substOne returns what body[*i] of m stands for, not being a ## and its
// right operand: the token itself, an argument stringified (*i is then
// advanced past the parameter), an argument as written where a ## follows
// (a placemarker if it is empty), or else the argument expanded. The
// first token gets the blank of the body's token.
func (x *expander) substOne(m *macro, args [][]token, i *int) ([]token, error) {
	body := m.body
	b := body[*i]
	if b.text == "#" && b.kind == tPunct && m.funcLike && *i+1 < len(body) && m.param(body[*i+1]) >= 0 {
		*i++
		s := stringify(args[m.param(body[*i])])
		s.space = b.space
		return []token{s}, nil
	}
	p := m.param(b)
	if p < 0 {
		return []token{b}, nil
	}
	arg := args[p]
	if *i+1 < len(body) && body[*i+1].text == "##" {
		arg = slices.Clone(placemark(arg))
	} else {
		var err error
		if arg, err = x.expand(slices.Clone(arg), 0); err != nil {
			return nil, err
		}
	}
	if len(arg) > 0 {
		arg[0].space = b.space
	}
	return arg, nil
}

// dropPlacemarkers removes the placemarkers from ts, each passing its
// blank on to the token after it; gap says the last had one to pass on.
func dropPlacemarkers(ts []token) (out []token, gap bool) {
	out = ts[:0]
	for _, t := range ts {
		if t.kind == tPlacemarker {
			gap = gap || t.space
			continue
		}
		t.space = t.space || gap
		gap = false
		out = append(out, t)
	}
	return out, gap
}

// placemark stands an empty argument in for ## as a placemarker token.
func placemark(arg []token) []token {
	if len(arg) == 0 {
		return []token{{kind: tPlacemarker}}
	}
	return arg
}

// paste joins the last token of out with the first of rhs (##) and
// re-lexes the result, which has the blank of the left operand, a
// placemarker's included.
func paste(out, rhs []token) []token {
	lhs := out[len(out)-1]
	out = out[:len(out)-1]
	switch {
	case lhs.kind == tPlacemarker:
		rhs = slices.Clone(rhs)
		rhs[0].space = lhs.space
		return append(out, rhs...)
	case rhs[0].kind == tPlacemarker:
		return append(append(out, lhs), rhs[1:]...)
	}
	joined := tokenize(lhs.text + rhs[0].text)
	if len(joined) > 0 {
		joined[0].space = lhs.space
	}
	out = append(out, joined...)
	return append(out, rhs[1:]...)
}

// stringify spells arg as a string literal (the # operator): a string or
// character literal escaped, any other token (a header name, an
// unterminated literal) as written.
func stringify(arg []token) token {
	var b strings.Builder
	b.WriteByte('"')
	for i, t := range arg {
		if t.kind == tPlacemarker {
			continue
		}
		if i > 0 && t.space {
			b.WriteByte(' ')
		}
		if (t.kind == tString || t.kind == tChar) && literalClosed(t.text) {
			b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(t.text))
			continue
		}
		b.WriteString(t.text)
	}
	b.WriteByte('"')
	return token{kind: tString, text: b.String()}
}

// union returns hs with names added, sharing nothing with hs.
func union(hs []string, names ...string) []string {
	out := slices.Clone(hs)
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func intersect(a, b []string) []string {
	var out []string
	for _, n := range a {
		if slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}
