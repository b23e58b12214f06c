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
		res, err := x.expand(slices.Clone(ts))
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
// Prosser's algorithm).
func (x *expander) expand(ts []token) ([]token, error) {
	var out []token
	for len(ts) > 0 {
		if *x.steps++; *x.steps > maxExpandSteps || len(ts)+len(out) > maxExpandTokens {
			return nil, errUnknowable
		}
		t := ts[0]
		if t.kind != tIdent || t.noexp {
			out, ts = append(out, t), ts[1:]
			continue
		}
		if slices.Contains(t.hide, t.text) {
			t.noexp = true
			out, ts = append(out, t), ts[1:]
			continue
		}
		m, err := x.lookup(t.text)
		if err != nil {
			return nil, err
		}
		if m == nil || (m.funcLike && (len(ts) < 2 || ts[1].text != "(")) {
			out, ts = append(out, t), ts[1:]
			continue
		}
		if m.vaOpt {
			return nil, errUnknowable
		}
		var body []token
		if !m.funcLike {
			body, err = x.subst(m, nil, union(t.hide, m.name))
			ts = ts[1:]
		} else {
			var args [][]token
			var rparen token
			args, rparen, ts, err = collectArgs(m, ts[2:])
			if err != nil {
				return nil, err
			}
			body, err = x.subst(m, args, union(intersect(t.hide, rparen.hide), m.name))
		}
		if err != nil {
			return nil, err
		}
		if len(body) > 0 {
			body[0].space = t.space
		}
		ts = append(body, ts...)
	}
	return out, nil
}

// collectArgs reads a macro call's arguments after its '(' and returns
// them, the closing ')' and the tokens after it.
func collectArgs(m *macro, ts []token) (args [][]token, rparen token, rest []token, err error) {
	depth := 0
	var cur []token
	for i, t := range ts {
		switch {
		case t.text == "(":
			depth++
		case t.text == ")" && depth > 0:
			depth--
		case t.text == ")":
			args = append(args, cur)
			args, err = fitArgs(m, args)
			return args, t, ts[i+1:], err
		case t.text == "," && depth == 0 && !(m.variadic && len(args) == len(m.params)-1):
			args, cur = append(args, cur), nil
			continue
		}
		cur = append(cur, t)
	}
	return nil, token{}, nil, errInvalid
}

// fitArgs checks the argument count against the parameters.
func fitArgs(m *macro, args [][]token) ([][]token, error) {
	switch {
	case len(m.params) == 0 && len(args) == 1 && len(args[0]) == 0:
		return nil, nil
	case m.variadic && len(args) == len(m.params)-1:
		return append(args, nil), nil // empty variable arguments
	case len(args) != len(m.params):
		return nil, errInvalid
	}
	return args, nil
}

// subst returns m's body with its parameters replaced (C11 6.10.3.1-3):
// an argument after # is stringified, one next to ## is pasted as
// written, any other is fully expanded first. Every resulting token gets
// the hide set hs.
func (x *expander) subst(m *macro, args [][]token, hs []string) ([]token, error) {
	var out []token
	body := m.body
	for i := 0; i < len(body); i++ {
		b := body[i]
		if b.text == "#" && b.kind == tPunct && m.funcLike && i+1 < len(body) && m.param(body[i+1]) >= 0 {
			s := stringify(args[m.param(body[i+1])])
			s.space = b.space
			out = append(out, s)
			i++
			continue
		}
		if b.text == "##" && b.kind == tPunct && len(out) > 0 && i+1 < len(body) {
			i++
			rhs := []token{body[i]}
			if p := m.param(body[i]); p >= 0 {
				rhs = placemark(args[p])
			}
			out = paste(out, rhs)
			continue
		}
		p := m.param(b)
		if p < 0 {
			out = append(out, b)
			continue
		}
		arg := args[p]
		if i+1 < len(body) && body[i+1].text == "##" {
			arg = placemark(arg)
		} else {
			var err error
			if arg, err = x.expand(slices.Clone(arg)); err != nil {
				return nil, err
			}
		}
		arg = slices.Clone(arg)
		if len(arg) > 0 {
			arg[0].space = b.space
		}
		out = append(out, arg...)
	}
	out = slices.DeleteFunc(out, func(t token) bool { return t.kind == tPlacemarker })
	for i := range out {
		out[i].hide = union(out[i].hide, hs...)
	}
	return out, nil
}

// placemark stands an empty argument in for ## as a placemarker token.
func placemark(arg []token) []token {
	if len(arg) == 0 {
		return []token{{kind: tPlacemarker}}
	}
	return arg
}

// paste joins the last token of out with the first of rhs (##) and
// re-lexes the result.
func paste(out, rhs []token) []token {
	lhs := out[len(out)-1]
	out = out[:len(out)-1]
	switch {
	case lhs.kind == tPlacemarker:
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

// stringify spells arg as a string literal (the # operator).
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
		if t.kind == tString || t.kind == tChar {
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
