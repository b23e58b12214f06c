package deps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// maxIncludeDepth is clang's limit on nested includes; past it the
// compiler fails, and the scan widens rather than guess why.
const maxIncludeDepth = 200

// scan is the state of one Scan.
type scan struct {
	ctx    context.Context
	s      *Scanner
	in     Input
	wd     string
	inv    invocation
	table  *macroTable
	trace  []Dependency
	listed map[Dependency]bool
	// scanned holds the macro table's generation when each file was last
	// scanned: a file with computed includes is scanned again when new
	// definitions could change what they name.
	scanned map[string]uint64
	// roots are the directories whose every file the key must hold,
	// because an include there could not be resolved exactly.
	roots []string
	// unseen says an include was found nowhere the scan looks: the
	// compiler may find it in its own directories, and any macro it
	// defines is invisible here.
	unseen  bool
	missing []string // includes found nowhere
	// builtins are the macros of Input.Builtins, learnt on first need.
	builtins *macroTable
	// seen is every stat the scan made, once per path, for its memo.
	seen     []observation
	observed map[string]bool
}

func newScan(ctx context.Context, s *Scanner, in Input, wd string) *scan {
	return &scan{
		ctx: ctx, s: s, in: in, wd: wd,
		inv:      parseArgs(in.Args, wd, in.SearchWorkDir, in.SystemDirs...),
		table:    newMacroTable(),
		listed:   map[Dependency]bool{},
		scanned:  map[string]uint64{},
		observed: map[string]bool{},
	}
}

func (sc *scan) run() error {
	sc.table.applyOptions(sc.inv.macros)
	mainDir := ""
	switch {
	case sc.in.SearchWorkDir:
		mainDir = sc.wd
	case sc.in.Path != "":
		mainDir = filepath.Dir(sc.abs(sc.in.Path))
	}
	// A -include file is searched first in the working directory, then
	// as a quoted include of the main source.
	for _, f := range sc.inv.forced {
		if err := sc.include(f, false, sc.wd, RuleForcedInclude, dInclude, 0); err != nil {
			return err
		}
	}
	if err := sc.process(parseDirectives(sc.in.Source), mainDir, 0); err != nil {
		return err
	}
	for _, d := range sc.in.Depends {
		if err := sc.declared(d); err != nil {
			return err
		}
	}
	return sc.manifest()
}

func (sc *scan) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return sc.wd + "/" + p
}

// process follows the directives of one file, whose includes are searched
// from includerDir.
func (sc *scan) process(dirs []directive, includerDir string, depth int) error {
	for _, d := range dirs {
		if err := sc.ctx.Err(); err != nil {
			return err
		}
		var err error
		switch d.kind {
		case dDefine:
			sc.table.define(d.macro)
		case dUndef:
			sc.table.undef(d.name)
		default:
			err = sc.directive(d, includerDir, depth)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// headerRef is an include's name and form.
type headerRef struct {
	name  string
	angle bool
}

// directive resolves one include-like directive.
func (sc *scan) directive(d directive, includerDir string, depth int) error {
	rule := RuleInclude
	switch d.kind {
	case dEmbed:
		rule = RuleEmbed
	case dHasInclude:
		rule = RuleHasInclude
	}
	refs := []headerRef{{d.name, d.angle}}
	if d.operand != nil {
		if d.kind == dInclude || d.kind == dIncludeNext {
			rule = RuleComputedInclude
		}
		var ok bool
		if refs, ok = sc.expand(d.operand, includerDir); !ok {
			return nil
		}
	}
	for _, r := range refs {
		if err := sc.include(r.name, r.angle, includerDir, rule, d.kind, depth); err != nil {
			return err
		}
	}
	return nil
}

// expand returns every header a computed include may name; false when it
// cannot be known, after widening the key.
func (sc *scan) expand(operand []token, includerDir string) ([]headerRef, bool) {
	sc.table.fallback = sc.builtinMacros
	variants, err := sc.table.expandVariants(operand, sc.unknown)
	if err != nil {
		sc.widen(includerDir, "computed include cannot be expanded", "operand", spell(operand), "reason", err)
		return nil, false
	}
	var refs []headerRef
	for _, v := range variants {
		name, angle, ok := headerName(v)
		if !ok {
			sc.s.report(sc.sourceName(), "an expansion of a computed include is no header name: the compiler would reject it, so it names nothing",
				"operand", spell(operand), "expansion", spell(v))
			continue
		}
		if !slices.Contains(refs, headerRef{name, angle}) {
			refs = append(refs, headerRef{name, angle})
		}
	}
	if len(refs) == 0 {
		sc.widen(includerDir, "computed include expands to no header name", "operand", spell(operand))
		return nil, false
	}
	return refs, true
}

// unknown reports whether an identifier neither the scanned files nor the
// built-in headers define may still be a macro to the compiler: a reserved
// name (where compilers put their predefined macros), a name OpenCL
// compilers predefine (CL_VERSION_1_2, the cl_khr_* extension macros,
// FP_FAST_FMA), one of the few unreserved names GNU mode predefines, or
// any name at all once an include was not found (its header may define
// anything).
func (sc *scan) unknown(name string) bool {
	if sc.unseen || strings.HasPrefix(name, "__") || (len(name) > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z') {
		return true
	}
	for _, p := range predefinedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "linux", "unix", "i386", "i686", "x86_64", "amd64":
		return true
	}
	return false
}

// predefinedPrefixes start the unreserved names OpenCL compilers define on
// their own.
var predefinedPrefixes = []string{"CL_", "cl_", "FP_FAST_FMA"}

// builtinMacros learns the macros of Input.Builtins when a computed
// include first needs them. The table is kept by the Scanner under the
// files' identities: the compiler's headers hold thousands of macros, and
// rebuilding the table would cost every first scan of such a source some
// milliseconds.
func (sc *scan) builtinMacros() *macroTable {
	if sc.builtins != nil {
		return sc.builtins
	}
	var files []*fileEntry
	var ids strings.Builder
	trusted := true
	for _, p := range sc.in.Builtins {
		fi, err := sc.stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		e, err := sc.s.files.get(sc.s.fs, p, fi)
		if err != nil {
			continue
		}
		files = append(files, e)
		fmt.Fprintf(&ids, "%s\x00%x\x00", p, e.digest)
		trusted = trusted && e.id.trusted(e.id, sc.s.fs.now())
	}
	sc.builtins = sc.s.builtins.get(ids.String(), trusted, func() *macroTable {
		t := newMacroTable()
		for _, e := range files {
			for _, d := range e.directives {
				if d.kind == dDefine {
					t.define(d.macro)
				}
			}
		}
		return t
	})
	return sc.builtins
}

// include resolves one header name as the compiler searches for it. Every
// place searched before the file found is recorded as absent, so that a
// file created there later changes the key (shadowing). #include_next (and
// any include under Input.EveryCandidate) takes every file on the path, a
// superset of the one the compiler picks.
func (sc *scan) include(name string, angle bool, includerDir, rule string, kind dirKind, depth int) error {
	found := false
	for _, c := range sc.candidates(name, angle, includerDir) {
		fi, err := sc.stat(c)
		if err == nil && fi.Mode().IsRegular() {
			if err := sc.file(c, fi, name, rule, kind, depth); err != nil {
				return err
			}
			found = true
			if kind == dIncludeNext || sc.in.EveryCandidate {
				continue
			}
			return nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			// Neither the scan nor, probably, the compiler can look
			// there; which one wins is a guess, so the key widens.
			sc.widen(filepath.Dir(c), "include candidate cannot be examined", "path", c, "error", err)
		}
		if !found {
			sc.add(Dependency{Path: c, Name: name, Rule: RuleAbsent})
		}
	}
	switch {
	case found || (kind != dInclude && kind != dIncludeNext):
	case sc.in.CompleteSearchPath:
		sc.missing = append(sc.missing, name)
		sc.s.report(sc.sourceName(), "include found nowhere: keyed by its absence (the build fails if it is live)", "name", name)
	default:
		sc.missing = append(sc.missing, name)
		sc.unseen = true
		sc.s.report(sc.sourceName(), "include found nowhere: the compiler's own directories may hold it, so computed includes that follow trust no undefined name", "name", name)
	}
	return nil
}

// candidates returns the places the compiler looks for name, in order.
func (sc *scan) candidates(name string, angle bool, includerDir string) []string {
	if filepath.IsAbs(name) {
		return []string{name}
	}
	var dirs []string
	if !angle {
		if includerDir != "" {
			dirs = append(dirs, includerDir)
		}
		dirs = append(dirs, sc.inv.quoteDirs...)
	}
	dirs = append(dirs, sc.inv.angledDirs...)
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		// Joined, not cleaned: the kernel resolves ".." after a symbolic
		// link physically, as the compiler's open does.
		if c := d + "/" + name; !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// file records a found header and follows its own includes.
func (sc *scan) file(path string, fi fs.FileInfo, name, rule string, kind dirKind, depth int) error {
	e, err := sc.s.files.get(sc.s.fs, path, fi)
	if err != nil {
		return fmt.Errorf("deps: header %s: %w", path, err)
	}
	sc.add(Dependency{Path: path, Name: name, Digest: e.digest, Rule: rule})
	if kind == dEmbed || kind == dHasInclude {
		return nil // read as data, or only tested for existence
	}
	if depth+1 > maxIncludeDepth {
		sc.widen(filepath.Dir(path), "includes nested too deep", "path", path)
		return nil
	}
	if gen, ok := sc.scanned[path]; ok && (!e.computed || gen == sc.table.gen) {
		return nil
	}
	sc.scanned[path] = sc.table.gen
	return sc.process(e.directives, filepath.Dir(path), depth+1)
}

// declared records a dependency the caller named; a missing one is an
// absent place, so creating it changes the key.
func (sc *scan) declared(name string) error {
	path := sc.abs(name)
	fi, err := sc.stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		sc.add(Dependency{Path: path, Name: name, Rule: RuleAbsent})
		return nil
	}
	e, err := sc.s.files.get(sc.s.fs, path, fi)
	if err != nil {
		return fmt.Errorf("deps: declared dependency %s: %w", path, err)
	}
	sc.add(Dependency{Path: path, Name: name, Digest: e.digest, Rule: RuleDeclared})
	return nil
}

// add appends d to the trace once.
func (sc *scan) add(d Dependency) {
	if !sc.listed[d] {
		sc.listed[d] = true
		sc.trace = append(sc.trace, d)
	}
}

// widen records that every directory the compiler could search from
// includerDir must enter the key, and says why once.
func (sc *scan) widen(includerDir, reason string, attrs ...any) {
	sc.s.report(sc.sourceName(), reason+": the key holds every file of the search directories", attrs...)
	dirs := append([]string{includerDir}, sc.inv.quoteDirs...)
	for _, d := range append(dirs, sc.inv.angledDirs...) {
		if d != "" && !slices.Contains(sc.roots, d) {
			sc.roots = append(sc.roots, d)
		}
	}
}

// sourceName names the source in log messages: its path, or a digest
// prefix of its text.
func (sc *scan) sourceName() string {
	if sc.in.Path != "" {
		return sc.in.Path
	}
	d := sha256.Sum256(sc.in.Source)
	return "source:" + hex.EncodeToString(d[:6])
}

// spell writes tokens back as text, for messages.
func spell(ts []token) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 && t.space {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}
