package gentree

import (
	"fmt"
	"path"
	"strings"
)

// systems writes a CCCL-style choice of system (class Systems): a
// configuration header defines the system's name on one branch of an
// #if/#elif chain over a selector (from an option, or a default the
// configuration gives when no option does), and a header includes that
// system's files through names built from it: an angled name held by a
// macro #undef'd after use (Thrust's __THRUST_DEVICE_SYSTEM_TAG_HEADER), a
// stringized path, and names pasted from the system's name with ##, in
// quoted and angled forms. Only the selected system's files need exist;
// the others' may be missing, as a toolkit ships only some systems.
func (g *gen) systems() {
	id := strings.ToLower(g.name("s"))
	up := strings.ToUpper(id)
	n := 2 + g.r.IntN(3)
	sel := "SEL_" + up
	chosen := 1 + g.r.IntN(n)
	def := chosen
	if g.chance(0.6) {
		g.p.Options = append(g.p.Options, "-D", fmt.Sprintf("%s=%d", sel, chosen))
		def = 1 + g.r.IntN(n) // overridden: its branch is dead
	}
	ns := func(i int) string { return fmt.Sprintf("%sn%d", id, i) }
	cfg := g.systemHeader(path.Join("inc", id+"cfg", "config.h"), 2)
	g.add(cfg,
		g.line(Systems, "define", "CAT_"+up+"(a, b) CATX_"+up+"(a, b)"),
		g.line(Systems, "define", "CATX_"+up+"(a, b) a##b"),
		g.line(Systems, "define", "STR_"+up+"(x) #x"),
		g.line(Systems, "define", "XSTR_"+up+"(x) STR_"+up+"(x)"),
		g.line(Systems, "ifndef", sel),
		g.line(Systems, "define", fmt.Sprintf("%s %d", sel, def)),
		g.line(Systems, "endif", ""))
	for i := 1; i <= n; i++ {
		d := "elif"
		if i == 1 {
			d = "if"
		}
		g.add(cfg, g.line(Systems, d, fmt.Sprintf("%s == %d", sel, i)), g.line(Systems, "define", "NS_"+up+" "+ns(i)))
	}
	g.add(cfg, g.line(Systems, "endif", ""),
		g.line(Systems, "define", "ROOT_"+up+" "+id+"/NS_"+up))

	use := g.systemHeader(path.Join("inc", id+"use.h"), 200)
	type shape struct {
		lines []string
		file  func(ns string) string
	}
	shapes := []shape{
		{[]string{"define TAG_" + up + " <ROOT_" + up + "/detail/tag.h>", "include TAG_" + up, "undef TAG_" + up},
			func(ns string) string { return path.Join("inc", id, ns, "detail", "tag.h") }},
		{[]string{"include XSTR_" + up + "(ROOT_" + up + "/detail/impl.h)"},
			func(ns string) string { return path.Join("inc", id, ns, "detail", "impl.h") }},
		{[]string{"include XSTR_" + up + "(CAT_" + up + "(NS_" + up + ", _ops).h)"},
			func(ns string) string { return path.Join("inc", ns+"_ops.h") }},
		{[]string{"define ANG_" + up + "(x) <x>", "include ANG_" + up + "(ROOT_" + up + "/CAT_" + up + "(NS_" + up + ", _x).h)"},
			func(ns string) string { return path.Join("inc", id, ns, ns+"_x.h") }},
	}
	for _, s := range shapes {
		if !g.chance(0.7) {
			continue
		}
		for _, l := range s.lines {
			name, text, _ := strings.Cut(l, " ")
			g.add(use, g.line(Systems, name, text))
		}
		for i := 1; i <= n; i++ {
			if i == chosen || g.chance(0.6) {
				f := g.systemHeader(s.file(ns(i)), 300)
				g.add(f, g.line(Systems, "", fmt.Sprintf("int sys%d;", g.counter)))
				g.counter++
			}
		}
	}
	g.add(g.main,
		g.line(Systems, "include", "<"+id+"cfg/config.h>"),
		g.line(Systems, "include", "<"+id+"use.h>"))
}

// systemHeader creates a header of the Systems structure: included only
// by it, with no random body (its names need the configuration's macros).
func (g *gen) systemHeader(phys string, order int) *hdr {
	h := g.header(phys, order, Systems)
	h.private, h.leaf = true, true
	return h
}

// prior writes class Prior: a configuration defines a name only under an
// #ifdef (or, at random, on both branches of an #ifdef/#else, where it is
// certain), the option that selects the branch is given or not, and a
// computed include pastes the name into a file name. The files for the
// defined value and for the bare name both exist, so a key that forgets
// the branch may not have been taken misses the file the compiler reads.
func (g *gen) prior() {
	id := strings.ToLower(g.name("p"))
	up := strings.ToUpper(id)
	opt, name := "OPT_"+up, "PV_"+up
	if g.chance(0.5) {
		g.p.Options = append(g.p.Options, "-D", opt)
	}
	cfg := g.systemHeader(path.Join("inc", id+"cfg.h"), 2)
	g.add(cfg,
		g.line(Prior, "define", "STR_"+up+"(x) #x"),
		g.line(Prior, "define", "XSTR_"+up+"(x) STR_"+up+"(x)"),
		g.line(Prior, "ifdef", opt),
		g.line(Prior, "define", name+" "+id+"val"))
	if g.chance(0.3) {
		g.add(cfg, g.line(Prior, "else", ""), g.line(Prior, "define", name+" "+id+"alt"))
		f := g.systemHeader(path.Join("inc", id+"alt.h"), 300)
		g.add(f, g.line(Prior, "", fmt.Sprintf("int prior%d;", g.counter)))
		g.counter++
	}
	g.add(cfg, g.line(Prior, "endif", ""))
	for _, file := range []string{id + "val.h", name + ".h"} {
		f := g.systemHeader(path.Join("inc", file), 300)
		g.add(f, g.line(Prior, "", fmt.Sprintf("int prior%d;", g.counter)))
		g.counter++
	}
	use := g.systemHeader(path.Join("inc", id+"use.h"), 200)
	g.add(use, g.line(Prior, "include", "XSTR_"+up+"("+name+".h)"))
	g.add(g.main,
		g.line(Prior, "include", "<"+id+"cfg.h>"),
		g.line(Prior, "include", "<"+id+"use.h>"))
}
