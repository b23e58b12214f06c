package gentree

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// defines appends ordinary macro definitions, undefinitions and
// redefinitions: noise a scanner must carry without losing its place.
func (g *gen) defines(h *hdr) {
	m := g.name("DEF_")
	switch g.r.IntN(4) {
	case 0:
		g.add(h, g.line(Defines, "define", fmt.Sprintf("%s %d", m, g.r.IntN(9))))
	case 1:
		g.add(h, g.line(Defines, "define", m+"(x, y) ((x) * (y) + "+strconv.Itoa(g.r.IntN(9))+")"))
	case 2:
		g.add(h, g.line(Defines, "define", m+" 1"), g.line(Defines, "undef", m), g.line(Defines, "define", m+" 2"))
	case 3:
		g.add(h, g.line(Defines, "define", m+"(...) __VA_ARGS__"), g.line(Defines, "", m+"(int w"+strconv.Itoa(g.counter)+";)"))
	}
}

// headerNum returns N of a base header named hN.h.
func headerNum(t *hdr) (int, bool) {
	b := path.Base(t.phys)
	if !strings.HasPrefix(b, "h") || !strings.HasSuffix(b, ".h") {
		return 0, false
	}
	n, err := strconv.Atoi(b[1 : len(b)-2])
	return n, err == nil
}

// computed appends a computed include of a later header, in one of the
// shapes real code uses.
func (g *gen) computed(h *hdr) {
	t, spell := g.pickTarget(h, 1)
	if t == nil {
		return
	}
	quoted := spell[0] == '"'
	inner := spell[1 : len(spell)-1]
	prefix, file := path.Split(inner)
	n, numbered := headerNum(t)
	// Pasted shapes spell the name from tokens: "inc/h12.h" is
	// inc/CAT(h, 12).h. Names that hold "." or ".." stay whole.
	pasted := ""
	if numbered && file == path.Base(t.phys) {
		pasted = prefix + "CAT(h, " + strconv.Itoa(n) + ").h"
	}
	preMain := h.order > 0 && h.order < 2 // forced files run before cdefs.h
	m := g.name("CI_")
	switch k := g.r.IntN(9); {
	case preMain || k == 0: // defined right before, in the includer
		g.add(h, g.line(Computed, "define", m+" "+spell), g.line(Computed, "include", m))
	case k == 1: // defined in a header read earlier
		g.add(g.cdefs, g.line(Computed, "define", m+" "+spell))
		g.add(h, g.line(Computed, "include", m))
	case k == 2 && quoted && pasted != "":
		g.add(h, g.line(Computed, "include", "XSTR("+pasted+")"))
	case k == 3 && !quoted && pasted != "":
		g.add(h, g.line(Computed, "include", "ANGLED("+pasted+")"))
	case k == 4: // a chain of macros
		m2 := g.name("CI_")
		g.add(g.cdefs, g.line(Computed, "define", m+" "+m2))
		g.add(h, g.line(Computed, "define", m2+" "+spell), g.line(Computed, "include", m))
	case k == 5 && quoted && numbered && file == path.Base(t.phys): // function-like
		g.add(g.cdefs, g.line(Computed, "define", m+"(n) XSTR("+prefix+"CAT(h, n).h)"))
		g.add(h, g.line(Computed, "include", m+"("+strconv.Itoa(n)+")"))
	case k == 6 && quoted && prefix != "" && !strings.Contains(prefix, "."):
		// hashcat's shape: M2S(INCLUDE_PATH/file) with INCLUDE_PATH
		// from a -D option, defined once per program.
		ip := strings.TrimSuffix(prefix, "/")
		key := "INCLUDE_PATH_" + strings.NewReplacer("/", "_").Replace(ip)
		if _, ok := g.opts[key]; !ok {
			g.opts[key] = 0
			g.p.Options = append(g.p.Options, "-D", key+"="+ip)
		}
		g.add(h, g.line(Computed, "include", "M2S("+key+"/"+file+")"))
	case k == 7: // chosen by a conditional on an option
		t2, spell2 := g.pickTarget(h, 1)
		if t2 == nil {
			spell2 = spell
		}
		opt, v := g.someOpt()
		g.add(h,
			g.line(Computed, "if", fmt.Sprintf("%s > %d", opt, v)),
			g.line(Computed, "define", m+" "+spell),
			g.line(Computed, "else", ""),
			g.line(Computed, "define", m+" "+spell2),
			g.line(Computed, "endif", ""),
			g.line(Computed, "include", m))
	case k == 8: // redefined between two inclusions of a guardless header
		dir := h.dir()
		if h == g.main {
			dir = "." // not beside PoCL's temporary file
		}
		inc := g.header(path.Join(dir, g.name("cg")+".h"), h.order, Computed)
		inc.private = true
		g.add(inc, g.line(Computed, "include", m))
		t2, spell2 := g.pickTarget(h, 1)
		if t2 == nil {
			spell2 = spell
		}
		incSpell := `"` + path.Base(inc.phys) + `"`
		g.add(h,
			g.line(Computed, "define", m+" "+spell),
			g.line(Computed, "include", incSpell),
			g.line(Computed, "undef", m),
			g.line(Computed, "define", m+" "+spell2),
			g.line(Computed, "include", incSpell))
	default:
		g.add(g.cdefs, g.line(Computed, "define", m+" "+spell))
		g.add(h, g.line(Computed, "include", m))
	}
}

// someOpt returns a -D macro and a value to compare it with.
func (g *gen) someOpt() (string, int) {
	m := g.optNames[g.r.IntN(len(g.optNames))]
	return m, g.opts[m] - 1 + g.r.IntN(3)
}

// cond is a condition with the truth clang gives it.
type cond struct {
	directive, text string
	truth           bool
}

// condition draws a condition whose truth the generator knows: it reads
// only -D macros, literals and __has_include of files it knows, from h.
func (g *gen) condition(h *hdr, first bool) cond {
	opt, v := g.someOpt()
	optV := g.opts[opt]
	nope := g.name("NOPE_")
	forms := []func() cond{
		func() cond { x := g.r.IntN(2); return cond{"if", strconv.Itoa(x), x == 1} },
		func() cond { return cond{"if", "defined(" + opt + ")", opt != "0"} },
		func() cond { return cond{"if", "defined " + nope, false} },
		func() cond { return cond{"if", fmt.Sprintf("%s > %d", opt, v), optV > v} },
		func() cond {
			return cond{"if", fmt.Sprintf("!defined(%s) || %s == %d", nope, opt, v), true}
		},
	}
	if first {
		forms = append(forms,
			func() cond { return cond{"ifdef", opt, opt != "0"} },
			func() cond { return cond{"ifndef", nope, true} },
			func() cond { return cond{"ifdef", nope, false} },
		)
	}
	if g.on(HasInclude) {
		forms = append(forms, func() cond {
			if t, spell := g.pickTarget(h, 0); t != nil && g.r.IntN(2) == 0 {
				return cond{"if", "__has_include(" + spell + ")", true}
			}
			return cond{"if", `__has_include("` + g.name("absent") + `.h")`, false}
		})
	}
	c := forms[g.r.IntN(len(forms))]()
	if !first && c.directive == "if" {
		c.directive = "elif"
	}
	return c
}

// conditional appends an #if/#elif/#else block; the first true branch is
// live and gets real statements, the others are dead and may name
// headers that do not exist.
func (g *gen) conditional(h *hdr, depth int) {
	if depth > 1 {
		g.addInclude(h, Conditionals, false)
		return
	}
	live := false
	n := 1 + g.r.IntN(3)
	for i := 0; i < n; i++ {
		c := g.condition(h, i == 0)
		g.add(h, g.line(Conditionals, c.directive, c.text))
		g.branch(h, depth, c.truth && !live)
		live = live || c.truth
	}
	if g.chance(0.5) {
		g.add(h, g.line(Conditionals, "else", ""))
		g.branch(h, depth, !live)
	}
	g.add(h, g.line(Conditionals, "endif", ""))
}

// branch fills one branch of a conditional.
func (g *gen) branch(h *hdr, depth int, live bool) {
	if live {
		g.body(h, 1+g.r.IntN(2), depth+1)
		return
	}
	switch g.r.IntN(3) {
	case 0:
		g.add(h, g.line(Conditionals, "include", `"`+g.name("missing")+`.h"`))
	case 1:
		g.add(h, g.line(Conditionals, "include", "<"+g.name("missing")+".h>"))
	default:
		g.addInclude(h, Conditionals, false) // read by a scanner, not by clang
	}
}

// hasInclude appends an include guarded by __has_include, spelled directly
// or through a macro.
func (g *gen) hasInclude(h *hdr) {
	t, spell := g.pickTarget(h, 0)
	if t == nil {
		return
	}
	test := "__has_include"
	if g.chance(0.5) {
		test = "HAS"
		g.add(h, g.line(HasInclude, "define", "HAS(x) __has_include(x)"))
	}
	missing := `"` + g.name("nothere") + `.h"`
	switch g.r.IntN(4) {
	case 0: // present: include it
		g.add(h,
			g.line(HasInclude, "if", test+"("+spell+")"),
			g.line(HasInclude, "include", spell),
			g.line(HasInclude, "else", ""),
			g.line(HasInclude, "include", missing),
			g.line(HasInclude, "endif", ""))
	case 1: // absent: the fallback is live
		g.add(h,
			g.line(HasInclude, "if", test+"("+missing+")"),
			g.line(HasInclude, "include", missing),
			g.line(HasInclude, "elif", test+"("+spell+")"),
			g.line(HasInclude, "include", spell),
			g.line(HasInclude, "endif", ""))
	case 2: // behind a test that __has_include exists
		g.add(h,
			g.line(HasInclude, "if", "defined(__has_include) && "+test+"("+spell+")"),
			g.line(HasInclude, "include", spell),
			g.line(HasInclude, "endif", ""))
	case 3: // __has_include_next in a file found by no search directory
		g.add(h,
			g.line(HasInclude, "if", "__has_include_next("+spell+")"),
			g.line(HasInclude, "include", spell),
			g.line(HasInclude, "endif", ""))
	}
}

// featureTest appends a test of a header's presence that includes nothing:
// the macro it defines is all that changes when the header appears or
// goes. The header tested is absent, or present (and then perhaps
// included elsewhere, perhaps not).
func (g *gen) featureTest(h *hdr) {
	spell := `"` + g.name("feature") + `.h"`
	if g.chance(0.5) {
		spell = "<" + g.name("feature") + ".h>"
	}
	if g.chance(0.4) {
		if t, s := g.pickTarget(h, 0); t != nil {
			spell = s
		}
	}
	test := "__has_include"
	switch g.r.IntN(4) {
	case 0:
		test = "HAS"
		g.add(h, g.line(FeatureTest, "define", "HAS(x) __has_include(x)"))
	case 1:
		test = "__has_include_next"
	}
	m := g.name("HAVE_")
	g.add(h,
		g.line(FeatureTest, "if", test+"("+spell+")"),
		g.line(FeatureTest, "define", m+" 1"),
		g.line(FeatureTest, "endif", ""))
}
