package gentree

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
)

// Generate returns the program of seed with the classes of classes (Base
// is always on). The same seed and classes give the same program.
func Generate(seed int64, classes Set) *Program {
	classes = classes.With(Base)
	g := &gen{
		r:     rand.New(rand.NewPCG(uint64(seed), uint64(classes))),
		p:     &Program{Seed: seed, Classes: classes, Main: ".pocl/tempfile.cl"},
		files: map[string]*hdr{},
		links: map[string]string{},
		opts:  map[string]int{},
	}
	g.build()
	return g.p
}

// gen is one program's generation state.
type gen struct {
	r *rand.Rand
	p *Program

	nextID int
	main   *hdr
	// files are the program's files by physical path; headers are the
	// includable ones in include order: a file includes only files after
	// it, so no include can recurse.
	files   map[string]*hdr
	headers []*hdr
	links   map[string]string // link path -> physical target directory

	// Search directories, physical, as clang orders them: -iquote
	// (quoted includes only), then -I (PoCL's "." first), -isystem,
	// -idirafter.
	quoteDirs, angledDirs []string

	// opts are the macros -D defines, with their values; every one is
	// defined for the whole program.
	opts     map[string]int
	optNames []string // the keys of opts, in order

	cdefs   *hdr // the header of computed-include macros, included first
	counter int  // names of macros and headers
}

// hdr is one file and what the generator knows about it.
type hdr struct {
	f     *File
	phys  string // physical path
	order int    // include order: a file includes only higher orders
	lines []Line // the body, wrapped by a guard when the file is done
	guard string // "", "ifndef" or "once"
	cls   Class  // class of the guard lines
	// private headers are included only by the structure that made
	// them: they need macros defined just before, or would include
	// themselves through #include_next if reached another way.
	private bool
	// leaf headers get no random body: they are read before cdefs.h.
	leaf bool
}

func (h *hdr) dir() string { return path.Dir(h.phys) }

func (g *gen) on(c Class) bool { return g.p.Classes.Has(c) }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func (g *gen) name(prefix string) string {
	g.counter++
	return fmt.Sprintf("%s%d", prefix, g.counter)
}

// line makes a line of class c.
func (g *gen) line(c Class, directive, text string) Line {
	g.nextID++
	return Line{ID: g.nextID, Class: c, Directive: directive, Text: text}
}

// add appends lines to h's body.
func (g *gen) add(h *hdr, ls ...Line) { h.lines = append(h.lines, ls...) }

// header creates a header at physical path phys with include order order.
func (g *gen) header(phys string, order int, c Class) *hdr {
	h := &hdr{f: &File{Path: phys}, phys: phys, order: order, cls: c}
	g.files[phys] = h
	g.headers = append(g.headers, h)
	return h
}

func (g *gen) build() {
	g.main = &hdr{f: &File{Path: g.p.Main}, phys: g.p.Main, order: -1}
	g.files[g.p.Main] = g.main
	g.options()

	// Base headers, spread over the search directories and beside them.
	dirs := []string{".", "inc", "inc2", "inc/sub", "d", "inc2/deep"}
	if g.on(Options) {
		dirs = append(dirs, "q", "sys", "after")
	}
	n := 4 + g.r.IntN(8)
	for i := 0; i < n; i++ {
		g.header(path.Join(dirs[g.r.IntN(len(dirs))], g.name("h")+".h"), 10+g.r.IntN(100), Base)
	}
	if g.on(Guards) {
		for _, h := range g.headers {
			switch g.r.IntN(3) {
			case 0:
				h.guard = "ifndef"
			case 1:
				h.guard = "once"
			}
			h.cls = Guards
		}
	}
	if g.on(Computed) {
		g.cdefs = g.header("cdefs.h", 0, Computed)
		g.add(g.cdefs,
			g.line(Computed, "define", "CAT_(a, b) a##b"),
			g.line(Computed, "define", "CAT(a, b) CAT_(a, b)"),
			g.line(Computed, "define", "STR(x) #x"),
			g.line(Computed, "define", "XSTR(x) STR(x)"),
			g.line(Computed, "define", "XM2S(x) #x"),
			g.line(Computed, "define", "M2S(x) XM2S(x)"),
			g.line(Computed, "define", "ANGLED(x) <x>"),
		)
	}
	// Special structures add headers of their own before bodies are
	// drawn, so the random includes can reach them too.
	special := []struct {
		c  Class
		fn func()
	}{
		{SameName, g.sameName},
		{IncludeNext, g.includeNext},
		{Symlink, g.symlink},
		{Rescan, g.rescan},
		{Forced, g.forced},
		{Systems, g.systems},
		{Prior, g.prior},
	}
	var later []func()
	for _, s := range special {
		if g.on(s.c) {
			later = append(later, s.fn)
		}
	}
	slices.SortStableFunc(g.headers, func(a, b *hdr) int { return a.order - b.order })

	// Main: the computed-include macros first, then the special
	// structures' entry points, then random statements.
	if g.cdefs != nil {
		g.add(g.main, g.line(Computed, "include", `"cdefs.h"`))
	}
	if g.on(HasInclude) && g.chance(0.5) {
		g.add(g.main, g.line(HasInclude, "define", "HAS(x) __has_include(x)"))
	}
	for _, fn := range later {
		fn()
	}
	g.body(g.main, 3+g.r.IntN(6), 0)
	g.add(g.main, g.line(Base, "", "__kernel void k(__global int *p) { p[get_global_id(0)] = 1; }"))
	// Headers' bodies, from the last (which can include nothing) up.
	slices.SortStableFunc(g.headers, func(a, b *hdr) int { return a.order - b.order })
	for _, h := range g.headers {
		if h == g.cdefs || h.leaf {
			continue
		}
		g.body(h, g.r.IntN(4), 0)
		g.add(h, g.line(Base, "", fmt.Sprintf("int v%d;", g.counter)))
		g.counter++
	}
	// Finish: guards, and the files in the program (Main first).
	g.p.Files = append(g.p.Files, g.main.f)
	g.main.f.Lines = g.main.lines
	for _, h := range g.headers {
		g.finish(h)
		g.p.Files = append(g.p.Files, h.f)
	}
	for l, t := range g.links {
		rel, _ := relPath(path.Dir(l), t)
		g.p.Links = append(g.p.Links, Link{Path: l, Target: rel})
	}
	slices.SortFunc(g.p.Links, func(a, b Link) int { return strings.Compare(a.Path, b.Path) })
}

// finish wraps h's body in its guard.
func (g *gen) finish(h *hdr) {
	var ls []Line
	switch h.guard {
	case "ifndef":
		m := "GUARD_" + strings.NewReplacer("/", "_", ".", "_").Replace(h.phys)
		ls = append(ls, g.line(h.cls, "ifndef", m), g.line(h.cls, "define", m))
		ls = append(ls, h.lines...)
		ls = append(ls, g.line(h.cls, "endif", ""))
	case "once":
		ls = append(ls, g.line(h.cls, "pragma", "once"))
		ls = append(ls, h.lines...)
	default:
		ls = h.lines
	}
	h.f.Lines = ls
}

// options draws the build options: -I inc -I inc2 always, spelled and
// extended by the Options and Symlink classes, and -D macros.
func (g *gen) options() {
	g.angledDirs = []string{"."} // PoCL's -I.
	var opts []string
	incs := []string{"inc", "inc2"}
	for _, d := range incs {
		spell := []string{"-I", d}
		if g.on(Options) {
			switch g.r.IntN(5) {
			case 0:
				spell = []string{"-I" + d}
			case 1:
				spell = []string{"-I./" + d + "/"}
			case 2:
				spell = []string{"-I", RootVar + "/" + d}
			}
		}
		opts = append(opts, spell...)
		g.angledDirs = append(g.angledDirs, d)
		g.p.Dirs = append(g.p.Dirs, d)
	}
	if g.on(Symlink) {
		g.links["lnk"] = "real/sub"
		g.p.Dirs = append(g.p.Dirs, "real/sub")
		switch g.r.IntN(3) {
		case 0:
			opts = append(opts, "-I", "lnk")
			g.angledDirs = append(g.angledDirs, "real/sub")
		case 1:
			// Physically real/, lexically the root.
			opts = append(opts, "-I", "lnk/..")
			g.angledDirs = append(g.angledDirs, "real")
		}
	}
	if g.on(Options) {
		opts = append(opts, "-iquote", "q", "-isystem", "sys", "-idirafter", "after")
		g.quoteDirs = append(g.quoteDirs, "q")
		g.angledDirs = append(g.angledDirs, "sys", "after")
		g.p.Dirs = append(g.p.Dirs, "q", "sys", "after")
	}
	for i := 0; i < 1+g.r.IntN(3); i++ {
		m, v := g.name("OPT_"), g.r.IntN(5)
		g.opts[m] = v
		g.optNames = append(g.optNames, m)
		if v == 1 && g.chance(0.5) {
			opts = append(opts, "-D"+m)
		} else {
			opts = append(opts, "-D", fmt.Sprintf("%s=%d", m, v))
		}
	}
	if g.on(Options) {
		// A macro defined and then undefined by the options.
		m := g.name("GONE_")
		opts = append(opts, "-D", m+"=1", "-U", m)
	}
	g.p.Options = opts
}

// sameName: a/c.h and b/c.h, each included as "c.h" by its neighbour, and
// a decoy c.h in the working directory that a scanner searching it first
// would take instead.
func (g *gen) sameName() {
	decoy := g.header("c.h", 5+g.r.IntN(100), SameName)
	_ = decoy
	for _, d := range []string{"a", "b"} {
		inc := g.header(d+"/"+g.name("x")+".h", 1+g.r.IntN(3), SameName)
		c := g.header(d+"/c.h", 4+g.r.IntN(100), SameName)
		g.add(inc, g.line(SameName, "include", `"c.h"`))
		_ = c
		g.add(g.main, g.line(SameName, "include", `"`+inc.phys+`"`))
	}
	if g.chance(0.5) {
		g.add(g.main, g.line(SameName, "include", "<c.h>"))
	}
}

// includeNext: n.h in ., inc and inc2 (the first not always), each but the
// last including the next by #include_next, perhaps tested with
// __has_include_next first.
func (g *gen) includeNext() {
	n := g.name("n") + ".h"
	var chain []*hdr
	for i, d := range []string{".", "inc", "inc2"} {
		if i == 0 && g.chance(0.5) {
			continue
		}
		h := g.header(path.Join(d, n), 2+i, IncludeNext)
		h.private = true
		chain = append(chain, h)
	}
	for i, h := range chain[:len(chain)-1] {
		spell := "<" + n + ">"
		if g.chance(0.3) {
			spell = `"` + n + `"`
		}
		if g.on(HasInclude) && g.chance(0.6) {
			g.add(h, g.line(HasInclude, "if", "__has_include_next("+spell+")"),
				g.line(IncludeNext, "include_next", spell),
				g.line(HasInclude, "else", ""),
				g.line(HasInclude, "include", `"missing_next_`+fmt.Sprint(i)+`.h"`),
				g.line(HasInclude, "endif", ""))
		} else {
			g.add(h, g.line(IncludeNext, "include_next", spell))
		}
	}
	g.add(g.main, g.line(IncludeNext, "include", "<"+n+">"))
}

// symlink: lnk -> real/sub; real/sub/lk.h includes "../common.h", which
// the kernel finds in real/ while a lexical "lnk/../common.h" is the decoy
// in the root; real/common.h includes "cx.h" from its own directory, where
// the root holds a decoy again.
func (g *gen) symlink() {
	lk := g.header("real/sub/"+g.name("lk")+".h", 2, Symlink)
	common := g.header("real/common.h", 3, Symlink)
	cx := g.header("real/cx.h", 4+g.r.IntN(50), Symlink)
	g.header("common.h", 5+g.r.IntN(50), Symlink)
	g.header("cx.h", 5+g.r.IntN(50), Symlink)
	g.add(lk, g.line(Symlink, "include", `"../common.h"`))
	g.add(common, g.line(Symlink, "include", `"cx.h"`))
	_ = cx
	g.add(g.main, g.line(Symlink, "include", `"lnk/`+path.Base(lk.phys)+`"`))
	if g.chance(0.5) {
		g.add(g.main, g.line(Symlink, "include", `"lnk/../common.h"`))
	}
	// Only in real/: reached by -I lnk/.. (physically real/), or by a
	// quoted "../" from lnk.
	rr := g.header("real/"+g.name("rr")+".h", 6+g.r.IntN(50), Symlink)
	if slices.Contains(g.angledDirs, "real") {
		g.add(g.main, g.line(Symlink, "include", "<"+path.Base(rr.phys)+">"))
	} else {
		g.add(lk, g.line(Symlink, "include", `"../`+path.Base(rr.phys)+`"`))
	}
}

// rescan: a guardless header rg.h, included twice by Main, reaches through
// a chain of guardless headers one that holds #include RE, with RE
// redefined between the inclusions to name two different headers.
func (g *gen) rescan() {
	re := g.name("RE_")
	top := g.header(g.name("rg")+".h", 2, Rescan)
	top.private = true
	cur := top
	for i := 0; i < g.r.IntN(3); i++ {
		next := g.header("inc/"+g.name("rg")+".h", 3+i, Rescan)
		next.private = true
		g.add(cur, g.line(Rescan, "include", `"`+path.Base(next.phys)+`"`))
		cur = next
	}
	g.add(cur, g.line(Rescan, "include", re))
	a := g.header(g.name("ra")+".h", 20+g.r.IntN(80), Rescan)
	b := g.header("inc2/"+g.name("rb")+".h", 20+g.r.IntN(80), Rescan)
	spellA, spellB := `"`+a.phys+`"`, "<"+path.Base(b.phys)+">"
	g.add(g.main,
		g.line(Rescan, "define", re+" "+spellA),
		g.line(Rescan, "include", `"`+top.phys+`"`),
		g.line(Rescan, "undef", re),
		g.line(Rescan, "define", re+" "+spellB),
		g.line(Rescan, "include", `"`+top.phys+`"`),
	)
}

// forced: -include fz.h (found in the working directory) includes a
// header; -imacros fm.h defines a macro that Main includes by. Both are
// read before Main includes cdefs.h, so they and what they include are
// leaves without random bodies, which could need its macros.
func (g *gen) forced() {
	fz := g.header(g.name("fz")+".h", 1, Forced)
	fz.leaf = true
	g.p.Options = append(g.p.Options, "-include", fz.phys)
	leaf := g.header("inc/"+g.name("fl")+".h", 1, Forced)
	leaf.leaf, leaf.private = true, true
	g.add(fz, g.line(Forced, "include", "<"+path.Base(leaf.phys)+">"))
	fm := g.header("inc/"+g.name("fm")+".h", 1, Forced)
	fm.leaf = true
	g.p.Options = append(g.p.Options, "-imacros", fm.phys)
	if t, spell := g.pickTarget(g.main, 1); t != nil {
		m := g.name("FM_")
		g.add(fm, g.line(Forced, "define", m+" "+spell))
		g.add(g.main, g.line(Forced, "include", m))
	}
}

// body appends n random statements to h.
func (g *gen) body(h *hdr, n, depth int) {
	type stmt struct {
		c      Class
		weight int
		fn     func()
	}
	stmts := []stmt{
		{Base, 6, func() { g.addInclude(h, Base, false) }},
		{Base, 2, func() { g.add(h, g.line(Base, "", fmt.Sprintf("int t%d;", g.counter))); g.counter++ }},
		{Guards, 2, func() { g.addInclude(h, Guards, true) }},
		{Defines, 2, func() { g.defines(h) }},
		{Computed, 4, func() { g.computed(h) }},
		{Conditionals, 3, func() { g.conditional(h, depth) }},
		{HasInclude, 3, func() { g.hasInclude(h) }},
		{FeatureTest, 3, func() { g.featureTest(h) }},
	}
	var total int
	for _, s := range stmts {
		if g.on(s.c) {
			total += s.weight
		}
	}
	for i := 0; i < n; i++ {
		x := g.r.IntN(total)
		for _, s := range stmts {
			if !g.on(s.c) {
				continue
			}
			if x < s.weight {
				s.fn()
				break
			}
			x -= s.weight
		}
	}
}

// addInclude includes a random later header from h; twice when twice (a
// guardless header read twice, a guarded one skipped the second time).
func (g *gen) addInclude(h *hdr, c Class, twice bool) {
	t, spell := g.pickTarget(h, 0)
	if t == nil {
		return
	}
	g.add(h, g.line(c, "include", spell))
	if twice {
		g.add(h, g.line(c, "", fmt.Sprintf("int between%d;", g.counter)))
		g.counter++
		if spell2 := g.spellings(h, t); len(spell2) > 0 {
			spell = spell2[g.r.IntN(len(spell2))]
		}
		g.add(h, g.line(c, "include", spell))
	}
}

// pickTarget returns a header h can include, after it in include order,
// with a spelling that finds it from h, or nil. kind 1 asks for a
// spelling usable in a macro (any); 2 for a name that XSTR can build from
// "hN.h".
func (g *gen) pickTarget(h *hdr, kind int) (*hdr, string) {
	var cands []*hdr
	for _, t := range g.headers {
		if t.order > h.order && t != g.cdefs && !t.private {
			cands = append(cands, t)
		}
	}
	for tries := 0; tries < 8 && len(cands) > 0; tries++ {
		t := cands[g.r.IntN(len(cands))]
		if sp := g.spellings(h, t); len(sp) > 0 {
			return t, sp[g.r.IntN(len(sp))]
		}
	}
	return nil, ""
}

// spellings returns the include operands ("x.h" or <x.h>) that find t
// when written in h, checked against clang's search rules.
func (g *gen) spellings(h, t *hdr) []string {
	name := path.Base(t.phys)
	dir := t.dir()
	cands := []string{name, t.phys, "./" + t.phys}
	if rel, ok := relPath(h.dir(), t.phys); ok {
		cands = append(cands, rel)
	}
	for _, d := range g.angledDirs {
		if rel, ok := relPath(d, t.phys); ok {
			cands = append(cands, rel)
		}
	}
	if dir != "." {
		cands = append(cands, "inc/../"+t.phys)
	}
	for l, target := range g.links {
		if rel, ok := relPath(target, t.phys); ok && !strings.HasPrefix(rel, "../") {
			cands = append(cands, l+"/"+rel)
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range cands {
		if seen[c] {
			continue
		}
		seen[c] = true
		if p, _ := g.find(c, false, h); p == t.phys {
			out = append(out, `"`+c+`"`)
		}
		if p, _ := g.find(c, true, h); p == t.phys {
			out = append(out, "<"+c+">")
		}
	}
	return out
}

// find returns the physical path clang finds for an include of name from
// h, quoted or angled, and the index of the search directory it was found
// in (-1 for the includer's directory), or "".
func (g *gen) find(name string, angled bool, h *hdr) (string, int) {
	var dirs []string
	if !angled {
		dirs = append(dirs, h.dir())
		dirs = append(dirs, g.quoteDirs...)
	}
	dirs = append(dirs, g.angledDirs...)
	for i, d := range dirs {
		p, ok := g.resolve(d + "/" + name)
		if !ok {
			continue
		}
		if i == 0 && !angled && h == g.main {
			// Main's directory is PoCL's cache directory, which
			// the application does not know of: a program that
			// relies on it is not what the generator means to
			// write (but clang searches it, so nothing may be
			// found there either).
			if _, ok := g.files[p]; ok && p != g.p.Main {
				return "", 0
			}
			continue
		}
		if _, ok := g.files[p]; ok && p != g.p.Main {
			return p, i - 1
		}
	}
	return "", 0
}

// resolve returns the physical path of p (relative to the root) as the
// kernel resolves it: component by component, following symbolic links
// before a later ".." applies, so "lnk/../x.h" is real/x.h when lnk links
// to real/sub. It fails where ".." leaves the root.
func (g *gen) resolve(p string) (string, bool) {
	var stack []string
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(stack) == 0 {
				return "", false
			}
			stack = stack[:len(stack)-1]
		default:
			// Each directory on the way must exist, or the kernel
			// fails the lookup.
			if len(stack) > 0 && !g.isDir(strings.Join(stack, "/")) {
				return "", false
			}
			stack = append(stack, c)
			if t, ok := g.links[strings.Join(stack, "/")]; ok {
				stack = strings.Split(t, "/")
			}
		}
	}
	if len(stack) == 0 {
		return ".", true
	}
	return strings.Join(stack, "/"), true
}

// isDir reports whether physical path d is a directory of the program.
func (g *gen) isDir(d string) bool {
	if d == "." || slices.Contains(g.p.Dirs, d) {
		return true
	}
	for p := range g.files {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// relPath returns the path of physical path to relative to physical
// directory from, through "..".
func relPath(from, to string) (string, bool) {
	split := func(p string) []string {
		if p == "." || p == "" {
			return nil
		}
		return strings.Split(p, "/")
	}
	f, t := split(from), split(to)
	for len(f) > 0 && len(t) > 0 && f[0] == t[0] {
		f, t = f[1:], t[1:]
	}
	var parts []string
	for range f {
		parts = append(parts, "..")
	}
	parts = append(parts, t...)
	if len(parts) == 0 {
		return "", false
	}
	return strings.Join(parts, "/"), true
}
