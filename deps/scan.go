package deps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// maxIncludeDepth is clang's limit on nested includes; past it the
// compiler fails, and the scan refuses the source rather than guess why.
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
	// scanned holds, for each file followed, what its subtree's
	// expansions depended on: the file is followed again when any of it
	// changed (see scanState).
	scanned map[string]*scanState
	// consulted collects the names expansions looked up, in order; a
	// file's subtree owns the part appended while it was followed, from
	// subtree on for the file being followed now.
	consulted []string
	subtree   int
	// hasIncludeMacros names the macros whose bodies hold __has_include
	// (directly, or through another such macro): conditionals that
	// expand one of them test for a file.
	hasIncludeMacros map[string]bool
	// refused says why no key can be trusted ("" while one can).
	refused string
	// date says a source expands __DATE__.
	date bool
	// assumed are the names the key assumes the compiler does not
	// predefine (Input.VerifiesPredefines), each once.
	assumed []string
	// namesFiles says a file read expands __FILE__ or the like.
	namesFiles bool
	// pastesPragma and stringizes say a file read, an option or (once
	// looked at) a built-in header defines a macro that may paste the
	// name _Pragma, or stringize a parameter; pragmaPiece that one spells
	// a piece such a paste can begin with (operators).
	pastesPragma, stringizes, pragmaPiece bool
	// builtinInclude says the scan follows a built-in header's include
	// (builtinIncludes).
	builtinInclude bool
	// builtinOperators says the built-in headers' macros were counted.
	builtinOperators bool
	// targetChains and targetWords are the halves of a pasted target
	// (paste.go) that the files read and the options hold; anyPaste says
	// a definition the scan made pastes, and bodyIdents holds the
	// identifiers of those definitions' bodies.
	targetChains targetSet
	targetWords  spelledPieces
	anyPaste     bool
	bodyIdents   map[string]bool
	// testPieces are the proper substrings of the names that test for a
	// file (fileTests and hasIncludeMacros), each true once a body learnt
	// spells it; testNames those names. testCache is mayPasteFileTest's
	// answer for no piece of a conditional's own, while testCacheFor is
	// what it was found with: the pieces spelled and the names learnt.
	testPieces   map[string]bool
	testNames    []string
	testSpelled  int
	testCache    bool
	testCacheFor [2]int
	// roots are the declared directories (Input.Depends) whose every
	// file the key must hold.
	roots []string
	// unseen says an include was found nowhere the scan looks: the
	// compiler may find it in its own directories, and any macro it
	// defines is invisible here.
	unseen  bool
	missing []string // includes found nowhere
	// builtins are the macros of Input.Builtins, learnt on first need;
	// builtinText is their text, read on first need (builtinsMention),
	// with the answers it gave.
	builtins    *macroTable
	builtinText *builtinTexts
	// seen is every stat the scan made, once per path, for its memo.
	seen     []observation
	observed map[string]bool
	// private is Input.PrivateDir where a record may name it by
	// privateRoot, and mainDir the directory the main source's quoted
	// includes are searched in first; probing says a stat is such a
	// probe, and unportable that the scan looked under private otherwise
	// (or private is unusable): it then stores no record.
	private, mainDir string
	probing          bool
	unportable       bool
}

func newScan(ctx context.Context, s *Scanner, in Input, wd string) *scan {
	sc := &scan{
		ctx: ctx, s: s, in: in, wd: wd,
		inv:              parseArgs(in.Args, wd, in.SearchWorkDir, in.SystemDirs...),
		table:            newMacroTable(),
		listed:           map[Dependency]bool{},
		scanned:          map[string]*scanState{},
		observed:         map[string]bool{},
		hasIncludeMacros: map[string]bool{},
		bodyIdents:       map[string]bool{},
		testPieces:       map[string]bool{},
		testCacheFor:     [2]int{-1, -1},
	}
	for _, name := range fileTests {
		sc.learnTestName(name)
	}
	return sc
}

func (sc *scan) run() error {
	if sc.in.LexesC && sc.in.LexesCPlusPlus {
		return errors.New("deps: an Input sets both LexesC and LexesCPlusPlus")
	}
	var overridden func(string) bool
	if sc.in.PredefinesAfterOptions {
		overridden = sc.predefinable
	}
	if why := predefinesUnsure(sc.inv, sc.in.Trigraphs); why != "" {
		sc.refuse(why)
	}
	decided, skipped := sc.table.applyOptions(sc.inv.macros, overridden)
	if sc.in.VerifiesPredefines {
		sc.optionAssumptions(decided)
	}
	sc.optionOperators(skipped)
	sc.table.consulted = sc.consult
	mainDir := ""
	switch {
	case sc.in.SearchWorkDir:
		mainDir = sc.wd
	case sc.in.Path != "":
		mainDir = includerDir(sc.abs(sc.in.Path))
	}
	if sc.in.MainDir != "" {
		mainDir = sc.abs(sc.in.MainDir)
	}
	sc.mainDir = mainDir
	if sc.in.PrivateDir != "" {
		sc.private = usablePrivate(sc.in, sc.wd)
		sc.unportable = sc.private == "" || namesPrivate(sc.in, sc.wd, sc.private)
	}
	sc.searchDirsAreDirs()
	// A -include file is searched first in the working directory, then
	// as a quoted include of the main source. What these files define
	// comes before the built-in headers, which may replace it (early).
	sc.table.early = true
	for _, f := range sc.inv.forced {
		if err := sc.include(f, false, sc.wd, RuleForcedInclude, dInclude, 0); err != nil {
			return err
		}
	}
	sc.table.early = false
	if err := sc.builtinIncludes(); err != nil {
		return err
	}
	main := parseFile(sc.in.Source, sc.mode())
	sc.facts(sc.sourceName(), &main)
	if err := sc.process(main.directives, mainDir, 0); err != nil {
		return err
	}
	for _, d := range sc.in.Depends {
		if err := sc.declared(d); err != nil {
			return err
		}
	}
	if err := sc.manifest(); err != nil {
		return err
	}
	sc.pastedTargets()
	if sc.refused != "" {
		return fmt.Errorf("%w: %s", ErrUncacheable, sc.refused)
	}
	sc.relocateTrace()
	if !placelessArgs(sc.in.Args) {
		// clang writes the working directory into debug information
		// (DW_AT_comp_dir): two builds from different places, with
		// headers named alike relative to each, differ.
		sc.add(Dependency{Path: sc.wd, Name: WorkDirHeader, Digest: sha256.Sum256([]byte(sc.wd)), Rule: RuleWorkDir})
	}
	return nil
}

// searchDirsAreDirs refuses the source where a search directory of the
// options is there but is no directory: clang reads such a file as a
// header map (the format of Apple's build tools, read on every system),
// which names the file to open for each include, and the scan reads no
// header map. A search directory that becomes a file later changes what
// the probes in it observe (stateNotDir), so the memo and records made
// now are checked against that too.
func (sc *scan) searchDirsAreDirs() {
	for _, dirs := range [][]string{sc.inv.quoteDirs, sc.inv.angledDirs} {
		for _, d := range dirs {
			if fi, err := sc.s.fs.statFile(d); err == nil && !fi.IsDir() {
				sc.refuse(fmt.Sprintf("search directory %s is not a directory: the compiler may read it as a header map", d))
			}
		}
	}
}

// WorkDirHeader is the name of the key's header that holds the working
// directory of a build whose options may write places into the binary.
const WorkDirHeader = "<working directory>"

// placelessArgs reports whether every option of args is a preprocessing
// option the scan follows or one known to write no place into the binary
// (placeless): only then may builds from different working directories
// share a key.
func placelessArgs(args []string) bool {
	for i := 0; i < len(args); i++ {
		if _, _, ok := splitOption(args[i], args, &i); ok {
			continue
		}
		if !placeless(args[i]) {
			return false
		}
	}
	return true
}

// facts applies what the parse of a file says beyond its directives:
// text the scanner cannot model, and the clock macros.
func (sc *scan) facts(path string, p *parsedFile) {
	sc.namesFiles = sc.namesFiles || p.namesFiles
	if p.restores {
		// From here on no definition or #undef is certain: a pop_macro
		// may undo it.
		sc.table.uncertain = true
	}
	sc.operators(p.pastesPragma, p.stringizes, p.pragmaPiece)
	sc.targetChains |= p.targetChains
	sc.targetWords.add(p.targetWords)
	switch {
	case p.unsure != "":
		sc.refuse(path + ": " + p.unsure)
	case p.clock == "__DATE__":
		sc.date = true
	case p.clock != "":
		sc.refuse(path + " expands " + p.clock + ", which no key can follow")
	}
}

// operators counts what a definition lends to a _Pragma that no text
// names: a macro that may paste its name from pieces (CAT(_Pra, gma)),
// a piece to begin that paste with (_Pra: holdsPragmaPiece), and a macro
// that stringizes its string from pieces (through a macro that expands
// them first). Once the scan has seen all three, in any files, no
// definition or #undef is certain, as after a _Pragma the text names:
// clang runs such a pragma, pop_macro included, and the scan cannot
// follow the pieces through every expansion. Without the piece no paste
// makes the name, however generic the pasting macro (libclc's
// __CLC_XCONCAT(x, y) x ## y, beside PoCL's stringizing _kernel.h).
func (sc *scan) operators(pastes, stringizes, piece bool) {
	sc.pastesPragma = sc.pastesPragma || pastes
	sc.stringizes = sc.stringizes || stringizes
	sc.pragmaPiece = sc.pragmaPiece || piece
	if sc.pastesPragma && sc.stringizes && sc.pragmaPiece {
		sc.table.uncertain = true
	}
}

// optionOperators counts the macros of -D options (operators): those the
// table holds, and skipped, those it left to the compiler. An option that
// spells a restoreMark makes definitions uncertain, as a file's text
// does: -DP=_Pragma(XS(pop_macro(S(H)))), with -DS(x)=#x and
// -DXS(x)=S(x), pops H wherever the text expands P, and no text names
// the pragma.
func (sc *scan) optionOperators(skipped []*macro) {
	for _, o := range sc.inv.macros {
		if o.define && restoreMarked(o.text) {
			sc.table.uncertain = true
		}
		// An option's value is a definition's body: its words are
		// grouped wherever they stand.
		w := targetWords([]byte(o.text), sc.in.LexesCPlusPlus, nil)
		sc.targetWords.add(pasteWords{all: w.all, grouped: w.all})
	}
	count := func(m *macro) {
		pastes, stringizes := m.restoreOperators()
		sc.operators(pastes, stringizes, m.spellsPragmaPiece())
		sc.targetChains |= m.pasteTargets()
		sc.learnBody(m)
		sc.learnFileTest(m)
	}
	for _, m := range skipped {
		count(m)
	}
	for _, c := range sc.table.defs {
		for _, m := range c.defs {
			count(m)
		}
	}
}

// settleOperators counts the built-in headers' macros (operators), and
// their restoreMarks (a macro of theirs may hold a whole _Pragma), before
// the table's certainty is first asked: the compiler includes those
// headers before the source, and either half of a hidden _Pragma may be
// theirs (PoCL's _kernel.h stringizes). They are read only then, since a
// definition's certainty matters only to a computed include.
func (sc *scan) settleOperators() {
	if sc.table.uncertain || sc.builtinOperators {
		return
	}
	sc.builtinOperators = true
	b := sc.builtinMacros()
	if b.restores {
		sc.table.uncertain = true
	}
	sc.operators(b.pastesPragma, b.stringizes, b.pragmaPiece)
}

// mode is how the compiler lexes the source and its headers.
func (sc *scan) mode() lexMode {
	return lexMode{tri: sc.in.Trigraphs, onlyC: sc.in.LexesC, cpp: sc.in.LexesCPlusPlus}
}

// dataMode parses files whose directives the scan does not follow (the
// compiler's built-in headers, for their macros; declared files, for
// their digests) as before: their parse decides no dependency.
var dataMode = lexMode{tri: TrigraphsOff, onlyC: true}

// refuse records why the source is uncacheable; the first reason is kept.
func (sc *scan) refuse(reason string) {
	if sc.refused == "" {
		sc.refused = reason
		sc.s.report(sc.sourceName(), "uncacheable: "+reason)
	}
}

// includerDir returns the directory the compiler searches first for a
// quoted include of the file at path: the path as opened, less its last
// element, not cleaned, since the kernel resolves a ".." after a
// symbolic link physically, as the compiler's open does.
func includerDir(path string) string {
	i := strings.LastIndexByte(path, '/')
	switch {
	case i < 0:
		return "."
	case i == 0:
		return "/"
	}
	return path[:i]
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
	base := len(sc.table.open)
	defer sc.table.close(base)
	var needs []string // of each conditional open in the file (directive.needs)
	for _, d := range dirs {
		if err := sc.ctx.Err(); err != nil {
			return err
		}
		var err error
		switch d.kind {
		case dDefine:
			sc.define(d.macro)
		case dUndef:
			sc.table.undef(d.name)
		case dIf:
			sc.table.enter(sc.certainlyUndefined(d.name))
			needs = append(needs, d.needs)
			sc.branch(d, needs)
		case dElse:
			sc.table.next(base, d.name == "else")
			if len(needs) > 0 {
				needs[len(needs)-1] = "" // taken where the others were not: not known
			}
			sc.branch(d, needs)
		case dEndif:
			sc.table.leave(base)
			if len(needs) > 0 {
				needs = needs[:len(needs)-1]
			}
		case dCondition:
			err = sc.condition(d.name, includerDir, depth)
		default:
			err = sc.directive(d, includerDir, depth)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// branch notes a branch the text is not balanced in (directive.unbalanced)
// that the compiler may read: unless it, or a branch it is in, is taken
// only where a name is a macro that certainly is none (needs), the words
// outside parentheses count as if they were within.
//
// The name is looked up when such a branch is met, not at its #if: the
// scan only learns definitions as it goes on (and learns that an include
// is found nowhere), so a name that is certainly no macro here was none
// at its #if.
func (sc *scan) branch(d directive, needs []string) {
	if !d.unbalanced || sc.targetWords.unbalanced {
		return
	}
	if !slices.ContainsFunc(needs, sc.certainlyNotMacro) {
		sc.targetWords.unbalanced = true
	}
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
		if refs, ok = sc.expand(d.operand); !ok {
			return nil
		}
	}
	kind := d.kind
	if d.next {
		kind = dIncludeNext // __has_include_next tests the places #include_next searches
	}
	for _, r := range refs {
		if err := sc.include(r.name, r.angle, includerDir, rule, kind, depth); err != nil {
			return err
		}
	}
	return nil
}

// expand returns every header a computed include may name; false when it
// names none, or cannot be known (the source is then refused).
func (sc *scan) expand(operand []token) ([]headerRef, bool) {
	sc.table.fallback = sc.builtinMacros
	sc.settleOperators()
	variants, err := sc.table.expandVariants(operand, sc.unknown)
	if err != nil {
		// Widening to the search directories is not enough: the
		// name may hold "..", or be absolute.
		sc.refuse(fmt.Sprintf("computed include %s cannot be expanded (%v)", spell(operand), err))
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
		// The compiler rejects such an include wherever it is live.
		sc.s.report(sc.sourceName(), "computed include expands to no header name", "operand", spell(operand))
		return nil, false
	}
	return refs, true
}

// unknown reports whether an identifier neither the scanned files nor the
// built-in headers define may still be a macro to the compiler: one it
// may predefine (see compilerMayDefine), or any name at all once an
// include was not found (its header may define anything).
func (sc *scan) unknown(name string) bool {
	sc.consult(unseenName)
	return sc.unseen || sc.compilerMayDefine(name)
}

// certainlyUndefined reports whether name is no macro at this point: no
// option, definition or #undef of it was seen, the built-in headers do
// not define it, and the compiler cannot (no assumption is made here: an
// #ifndef of a reserved name stays a branch).
func (sc *scan) certainlyUndefined(name string) bool {
	if name == "" {
		return false
	}
	sc.consult(unseenName)
	return !sc.unseen && !sc.predefinable(name) && sc.table.undefined(name, nil) && !sc.builtinsMayDefine(name)
}

// certainlyNotMacro reports whether name is no macro at this point, as
// certainlyUndefined does, but with the key's assumption that the
// compiler defines no name it is not known to, where the caller verifies
// it (compilerMayDefine): a branch it decides is one that no build with
// the key can take.
func (sc *scan) certainlyNotMacro(name string) bool {
	if name == "" {
		return false
	}
	sc.consult(unseenName)
	return !sc.unseen && sc.table.undefined(name, nil) && !sc.builtinsMayDefine(name) && !sc.compilerMayDefine(name)
}

// builtinsMayDefine reports whether the built-in headers define name. A
// name their text never mentions (an include guard, nearly always) they
// cannot define, and that is found by a search of their bytes; only a name
// they mention needs their macro table, which takes lexing the compiler's
// headers (PoCL's and clang's opencl-c.h, 1.6 MB: 56-114 ms, on the
// application's thread, for the first #ifndef of a process).
func (sc *scan) builtinsMayDefine(name string) bool {
	if sc.builtins == nil && !sc.builtinsMention(name) {
		return false
	}
	return sc.builtinMacros().defs[name] != nil
}

// predefinable reports whether the compiler may define name on its own: a
// reserved name (where compilers put their predefined macros), a name
// OpenCL compilers predefine (CL_VERSION_1_2, the cl_khr_* extension
// macros, FP_FAST_FMA), one of the few unreserved names GNU mode
// predefines, or a name the caller says the compiler defines
// (Input.CompilerMacros).
func (sc *scan) predefinable(name string) bool {
	if strings.HasPrefix(name, "__") || (len(name) > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z') {
		return true
	}
	for _, p := range predefinedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	if sc.compilerDefines(name) {
		return true
	}
	switch name {
	case "linux", "unix", "i386", "i686", "x86_64", "amd64":
		return true
	}
	return false
}

// compilerDefines reports whether the caller says the compiler defines
// name (Input.CompilerMacros).
func (sc *scan) compilerDefines(name string) bool {
	for _, m := range sc.in.CompilerMacros {
		if p, ok := strings.CutSuffix(m, "*"); ok && strings.HasPrefix(name, p) || m == name {
			return true
		}
	}
	return false
}

// optionAssumptions lists, for a caller that verifies the compiler's own
// macros (Input.VerifiesPredefines), each name of decided (those the
// options defined or undefined) that the compiler may predefine
// (RuleOptionDecides). The scan takes the option's word for such a name,
// which holds only where the compiler defines its own before the options:
// NVRTC 13 defines __CUDA_ARCH__, __CUDACC__ and __LP64__ after them, so
// that an option's -D or -U of those changes nothing, and a key that
// believed it would name the file of a computed include the compiler
// never opens. (Where the input says the compiler's come after the
// options, applyOptions decided no such name.)
func (sc *scan) optionAssumptions(decided []string) {
	for _, name := range decided {
		if sc.predefinable(name) {
			sc.add(Dependency{Path: name, Name: "<option decides: " + name + ">", Rule: RuleOptionDecides})
		}
	}
}

// compilerMayDefine reports whether the compiler may define name on its
// own (see predefinable), as far as the key can tell. Where the caller
// verifies it (Input.VerifiesPredefines), the key assumes the compiler
// does not, unless it is known to (Input.CompilerMacros), and lists the
// assumption (RuleNotPredefined).
func (sc *scan) compilerMayDefine(name string) bool {
	switch {
	case !sc.predefinable(name):
		return false
	case !sc.in.VerifiesPredefines || sc.compilerDefines(name):
		return true
	}
	if !slices.Contains(sc.assumed, name) {
		sc.assumed = append(sc.assumed, name)
		sc.add(Dependency{Path: name, Name: "<not predefined: " + name + ">", Rule: RuleNotPredefined})
	}
	return false
}

// predefinedPrefixes start the unreserved names OpenCL compilers define on
// their own: clang's extension macros include cles_khr_int64, which is
// not named cl_.
var predefinedPrefixes = []string{"CL_", "cl_", "cles_", "FP_FAST_FMA", "POCL_"}

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
	for _, f := range sc.builtinFiles() {
		e, err := sc.s.files.get(sc.s.fs, f.path, f.info, dataMode)
		if err != nil {
			continue
		}
		files = append(files, e)
		fmt.Fprintf(&ids, "%s\x00%x\x00", f.path, e.digest)
		trusted = trusted && e.settled
	}
	sc.builtins, _ = sc.s.builtins.get(ids.String(), trusted, func() (*macroTable, bool) {
		t := newMacroTable()
		for _, e := range files {
			for _, d := range e.directives {
				switch d.kind {
				case dDefine:
					t.define(d.macro)
				case dUndef:
					// _kernel.h's #undef CLANG_HAS_RW_IMAGES, where
					// the language has no read-write images,
					// undefines what an option or a -include set.
					t.undef(d.name)
				}
			}
			t.pastesPragma = t.pastesPragma || e.pastesPragma
			t.stringizes = t.stringizes || e.stringizes
			t.pragmaPiece = t.pragmaPiece || e.pragmaPiece
			t.restores = t.restores || e.restores
			t.targetChains |= e.targetChains
			t.targetWords.addBranches(e.targetWords)
		}
		t.learnBodies()
		return t, true
	})
	return sc.builtins
}

// builtinFile is a built-in header found by the scan, with its stat.
type builtinFile struct {
	path string
	info fs.FileInfo
}

// builtinFiles stats Input.Builtins for the scan (so a warm check sees an
// edited one) and returns the regular files among them, each file once:
// a path whose stat names the file of an earlier one (device, inode,
// size and times) is left out. OpenCL's list reaches clang's opencl-c.h
// by three paths (clang's version directories are links), and reading
// and lexing each copy was most of the first #ifndef of a process: 3.8
// MB of text where 2 MB are distinct.
func (sc *scan) builtinFiles() []builtinFile {
	var out []builtinFile
	for _, p := range sc.in.Builtins {
		fi, err := sc.stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		id := identityOf(fi)
		if id.inode != 0 && slices.ContainsFunc(out, func(f builtinFile) bool { return identityOf(f.info) == id }) {
			continue
		}
		out = append(out, builtinFile{p, fi})
	}
	return out
}

// builtinsMention reports whether the text of the built-in headers, with
// its line splices removed, holds name anywhere: in a directive, a
// comment, or as part of a longer word. Where it does not, no #define of
// the headers names it, and so their macro table (which holds every
// #define, taken or not) has no definition of it.
func (sc *scan) builtinsMention(name string) bool {
	if sc.builtinText == nil {
		t, ok := sc.readBuiltinText()
		if !ok {
			// A header that could not be read leaves every question to
			// the table.
			t = &builtinTexts{unread: true}
		}
		sc.builtinText = t
	}
	return sc.builtinText.mention(name)
}

// builtinTexts is the text of the built-in headers, and the answers
// already given about it: every scan of a source whose header has a guard
// asks about its guard, and each search reads 2 MB.
type builtinTexts struct {
	texts  [][]byte // one per file, never written once read
	paths  []string // the files' paths, one per text
	unread bool     // a file could not be read: every name may be there

	// incs are the includes of the texts (builtinIncludes), found once.
	incsOnce sync.Once
	incs     []builtinInclude
	computed bool // a text holds an include whose operand is no header name

	mu      sync.Mutex
	answers map[string]bool // guarded by mu
}

// maxBuiltinAnswers bounds the answers kept: a search again costs a
// fraction of a millisecond.
const maxBuiltinAnswers = 4096

// mention reports whether name occurs in the text.
func (b *builtinTexts) mention(name string) bool {
	if b.unread {
		return true
	}
	b.mu.Lock()
	found, ok := b.answers[name]
	b.mu.Unlock()
	if ok {
		return found
	}
	for i, text := range b.texts {
		if i > 0 && sharesText(b.texts[:i], text) {
			continue // a copy of a text searched already
		}
		if found = bytes.Contains(text, []byte(name)); found {
			break
		}
	}
	b.mu.Lock()
	if b.answers == nil || len(b.answers) >= maxBuiltinAnswers {
		b.answers = map[string]bool{}
	}
	b.answers[name] = found
	b.mu.Unlock()
	return found
}

// sharesText reports whether text is one of texts, the same bytes in the
// same memory (readBuiltinText gives a file equal to an earlier one the
// earlier one's text).
func sharesText(texts [][]byte, text []byte) bool {
	return slices.ContainsFunc(texts, func(t []byte) bool {
		return len(t) == len(text) && (len(t) == 0 || &t[0] == &text[0])
	})
}

// builtinInclude is an include directive of a built-in header: the
// header's directory, and the name it includes.
type builtinInclude struct {
	dir, name string
	angle     bool
}

// includeLine matches an include directive's line, a comment or blanks
// between its parts; its operand is the rest of the line.
var includeLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^(?:[ \t]|/\*.*?\*/)*(?:#|%:|\?\?=)(?:[ \t]|/\*.*?\*/)*(?:include|include_next|import)\b(?:[ \t]|/\*.*?\*/)*(.*)$`)
})

// includeOperands returns the operands of text's include directives,
// in their order. includeLine matches within one line that holds an
// introducer's first byte ('#', or '%' of %:, or '?' of ??=) and the
// word "include" or "import": the regexp is tried on those lines alone,
// found by a search for the three bytes, which are rare in headers where
// the letters of the words are not. Run over the whole of the built-in
// headers' 2 MB, it took 50-80 ms, many times a first build's lookup on
// 2 cores; a search for the words themselves, 1.2 ms.
func includeOperands(text []byte) [][]byte {
	introducers := [...]byte{'#', '%', '?'}
	var next [len(introducers)]int // where each is next, at or after at; -1 if nowhere
	indexFrom := func(at int, c byte) int {
		if i := bytes.IndexByte(text[at:], c); i >= 0 {
			return at + i
		}
		return -1
	}
	for k, c := range introducers {
		next[k] = indexFrom(0, c)
	}
	var ops [][]byte
	for {
		i := -1
		for _, n := range next {
			if n >= 0 && (i < 0 || n < i) {
				i = n
			}
		}
		if i < 0 {
			return ops
		}
		start, end := bytes.LastIndexByte(text[:i], '\n')+1, len(text)
		if j := bytes.IndexByte(text[i:], '\n'); j >= 0 {
			end = i + j
		}
		line := text[start:end]
		if bytes.Contains(line, []byte("include")) || bytes.Contains(line, []byte("import")) {
			if m := includeLine().FindSubmatch(line); m != nil {
				ops = append(ops, bytes.TrimSpace(m[1]))
			}
		}
		at := min(end+1, len(text))
		for k, c := range introducers {
			if next[k] >= 0 && next[k] < at {
				next[k] = indexFrom(at, c)
			}
		}
	}
}

// includes returns the include directives of the texts, found by a
// search of their bytes (a directive in a comment or a dead branch is
// one too), and whether one of them is computed (its operand no <name>
// or "name").
func (b *builtinTexts) includes() ([]builtinInclude, bool) {
	b.incsOnce.Do(func() {
		var seen [][][]byte // each text's operands
		for i, text := range b.texts {
			// PoCL installs a copy of clang's opencl-c.h: a text equal
			// to one searched already has its operands.
			j := slices.IndexFunc(b.texts[:i], func(t []byte) bool { return bytes.Equal(t, text) })
			if j >= 0 {
				seen = append(seen, seen[j])
			} else {
				seen = append(seen, includeOperands(text))
			}
			for _, op := range seen[i] {
				end := map[byte]byte{'<': '>', '"': '"'}
				if len(op) < 2 || end[op[0]] == 0 || bytes.IndexByte(op[1:], end[op[0]]) < 0 {
					b.computed = true
					continue
				}
				name := string(op[1 : 1+bytes.IndexByte(op[1:], end[op[0]])])
				inc := builtinInclude{dir: includerDir(b.paths[i]), name: name, angle: op[0] == '<'}
				if !slices.Contains(b.incs, inc) {
					b.incs = append(b.incs, inc)
				}
			}
		}
	})
	return b.incs, b.computed
}

// builtinIncludes follows the includes of the built-in headers that may
// leave the headers' directory: every angled one, and a quoted one whose
// file is not beside its header. The compiler reads the built-in headers
// before the source, and some select such an include by macros the build
// may set (PoCL 3.1's pocl_types.h includes <stdint.h> from the build's
// search path under -U__USE_CLANG_OPENCL_C_H -D__CBUILD__, and builds):
// each is taken as an include in a branch that may not be taken, before
// the source, so that what it finds, or the places where it finds
// nothing, enter the key, and what it defines is a candidate.
func (sc *scan) builtinIncludes() error {
	if len(sc.in.Builtins) == 0 {
		return nil
	}
	t, ok := sc.readBuiltinText()
	if !ok {
		sc.refuse("a built-in header cannot be read: its includes are not known")
		return nil
	}
	incs, computed := t.includes()
	if computed {
		sc.refuse("a built-in header has a computed include")
	}
	base := len(sc.table.open)
	sc.table.enter(false)
	sc.builtinInclude = true
	defer func() { sc.table.leave(base); sc.builtinInclude = false }()
	for _, inc := range incs {
		if !inc.angle && !filepath.IsAbs(inc.name) {
			if fi, err := sc.stat(inc.dir + "/" + inc.name); err == nil && fi.Mode().IsRegular() {
				continue // the compiler's own, beside its includer
			}
		}
		if err := sc.include(inc.name, inc.angle, "", RuleInclude, dInclude, 1); err != nil {
			return err
		}
	}
	return nil
}

// readBuiltinText returns the text of each built-in header without line
// splices, kept by the Scanner under the files' identities as their macro
// table is; false when one cannot be read. No name spans two files, so
// each is searched alone, in the buffer it was read into: unspliced in
// place, the text costs no copy.
func (sc *scan) readBuiltinText() (*builtinTexts, bool) {
	files := sc.builtinFiles()
	var ids strings.Builder
	trusted := true
	for _, f := range files {
		id := identityOf(f.info)
		fmt.Fprintf(&ids, "%s\x00%v\x00", f.path, id)
		trusted = trusted && id.settled(sc.s.fs.now())
	}
	return sc.s.builtinText.get(ids.String(), trusted, func() (*builtinTexts, bool) {
		// PoCL installs a copy of clang's opencl-c.h (895 KB; two files,
		// the same bytes): a file as long as one read already is compared
		// with it as it is read, through a small buffer, and shares its
		// text where it holds the same bytes. A new process's first scan
		// read both into memory never touched before (bench/RESULTS.md,
		// round twenty-three).
		raw := make([][]byte, len(files))
		same := make([]int, len(files)) // the earlier file whose bytes file i holds, or i
		for i, f := range files {
			same[i] = i
			for j := range i {
				if same[j] != j || int64(len(raw[j])) != f.info.Size() {
					continue
				}
				eq, err := sameContent(f.path, raw[j])
				if err != nil {
					return nil, false
				}
				if eq {
					same[i] = j
					break
				}
			}
			if same[i] != i {
				continue
			}
			b, err := sc.s.fs.readFile(f.path)
			if err != nil {
				return nil, false
			}
			raw[i] = b
		}
		texts := make([][]byte, len(files))
		paths := make([]string, len(files))
		for i, f := range files {
			if j := same[i]; j != i {
				texts[i] = texts[j]
			} else {
				texts[i] = appendUnspliced(raw[i][:0], raw[i])
			}
			paths[i] = f.path
		}
		return &builtinTexts{texts: texts, paths: paths}, true
	})
}

// unsplice removes every line splice from b: a backslash, any blanks
// (which clang accepts there, with a warning), and the line's end. Only a
// splice can make a name of bytes that are not together in the file.
func unsplice(b []byte) []byte { return appendUnspliced(make([]byte, 0, len(b)), b) }

// appendUnspliced appends b to out with its line splices removed (see
// unsplice). out may be b[:0]: what it writes never passes what it has
// yet to read.
func appendUnspliced(out, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, '\\')
		if i < 0 {
			return append(out, b...)
		}
		out = append(out, b[:i]...)
		j := i + 1
		for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\v' || b[j] == '\f') {
			j++
		}
		switch {
		case j+1 < len(b) && b[j] == '\r' && b[j+1] == '\n':
			b = b[j+2:]
		case j < len(b) && (b[j] == '\n' || b[j] == '\r'): // a lone CR ends a line too
			b = b[j+1:]
		default:
			out = append(out, '\\')
			b = b[i+1:]
		}
	}
}

// include resolves one header name as the compiler searches for it. Every
// place searched before the file found is recorded as absent, so that a
// file created there later changes the key (shadowing). #include_next (and
// any include under Input.EveryCandidate) takes every file on the path, a
// superset of the one the compiler picks.
func (sc *scan) include(name string, angle bool, includerDir, rule string, kind dirKind, depth int) error {
	if slices.Contains(sc.in.CompilerHeaders, name) {
		// The compiler takes its own before any file of that name: no
		// place shadows it, and no file holds what it defines.
		if kind == dInclude || kind == dIncludeNext {
			sc.unseen = true
			sc.s.report(sc.sourceName(), "include of a header the compiler holds: computed includes that follow trust no undefined name", "name", name)
		}
		return nil
	}
	found := false
	// #include_next (and __has_include_next) go on from the place after
	// the includer's, which the scan does not track: every place on the
	// path is keyed, found or absent.
	every := kind == dIncludeNext || sc.in.EveryCandidate
	// The first candidate of a quoted relative name from the main source
	// is MainDir joined with the name, which another process's scan makes
	// with its own directory: the one place under PrivateDir a record may
	// re-root.
	mainProbe := sc.private != "" && !angle && !filepath.IsAbs(name) && includerDir == sc.mainDir && depth == 0
	for i, c := range sc.candidates(name, angle, includerDir) {
		sc.probing = mainProbe && i == 0
		fi, err := sc.stat(c)
		sc.probing = false
		if err == nil && fi.Mode().IsRegular() {
			if err := sc.file(c, fi, rule, kind, depth); err != nil {
				return err
			}
			found = true
			if every {
				continue
			}
			return nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			// Neither the scan nor, probably, the compiler can look
			// there; which one wins is a guess.
			sc.refuse(fmt.Sprintf("include candidate %s cannot be examined: %v", c, err))
		}
		if err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			// A pipe or a device: the compiler reads it (clang includes a
			// FIFO's text), and what it reads is not there to key.
			sc.refuse(fmt.Sprintf("include candidate %s is not a regular file (%v)", c, fi.Mode().Type()))
		}
		if !found || every {
			sc.add(Dependency{Path: c, Name: sc.location(c), Rule: RuleAbsent})
		}
	}
	switch {
	case found || (kind != dInclude && kind != dIncludeNext) || sc.builtinInclude:
		// A built-in header's include found nowhere on the build's
		// path is the compiler's to find, or dead (builtinIncludes).
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
// Two places of one name are one: the second finds what the first did.
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
	dirs = append(dirs, sc.searchOrder()...)
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
func (sc *scan) file(path string, fi fs.FileInfo, rule string, kind dirKind, depth int) error {
	e, err := sc.s.files.get(sc.s.fs, path, fi, sc.mode())
	if err != nil {
		return fmt.Errorf("deps: header %s: %w", path, err)
	}
	sc.add(Dependency{Path: path, Name: sc.location(path), Digest: e.digest, Rule: rule})
	if kind == dEmbed || kind == dHasInclude {
		return nil // read as data, or only tested for existence
	}
	if depth+1 > maxIncludeDepth {
		sc.refuse("includes nested deeper than the compiler allows: " + path)
		return nil
	}
	if st := sc.scanned[path]; st != nil && !sc.changed(st) {
		sc.consulted = append(sc.consulted, st.names...)
		return nil
	}
	sc.facts(path, &e.parsedFile)
	st := &scanState{inProgress: true}
	sc.scanned[path] = st
	from, outer := len(sc.consulted), sc.subtree
	sc.subtree = from
	err = sc.process(e.directives, includerDir(path), depth+1)
	sc.subtree = outer
	sc.record(st, sc.consulted[from:])
	return err
}

// declared records a dependency the caller named; a missing one is an
// absent place, so creating it changes the key.
func (sc *scan) declared(name string) error {
	path := sc.abs(name)
	fi, err := sc.stat(path)
	switch {
	case err == nil && fi.IsDir():
		// Every file under it, within the manifest's bounds.
		sc.roots = appendNew(sc.roots, path)
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("deps: declared dependency %s: %w", path, err)
	case err == nil && !fi.Mode().IsRegular():
		// A pipe or a device: what the build reads from it is not there
		// to key.
		return fmt.Errorf("%w: declared dependency %s is not a regular file (%v)", ErrUncacheable, path, fi.Mode().Type())
	case err != nil:
		sc.add(Dependency{Path: path, Name: sc.location(path), Rule: RuleAbsent})
		return nil
	}
	e, err := sc.s.files.get(sc.s.fs, path, fi, dataMode)
	if err != nil {
		return fmt.Errorf("deps: declared dependency %s: %w", path, err)
	}
	sc.add(Dependency{Path: path, Name: sc.location(path), Digest: e.digest, Rule: RuleDeclared})
	return nil
}

// add appends d to the trace once.
func (sc *scan) add(d Dependency) {
	if !sc.listed[d] {
		sc.listed[d] = true
		sc.trace = append(sc.trace, d)
	}
}

// appendNew appends s to l unless l holds it.
func appendNew(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

// location is the name a dependency at path holds in the key: the path
// as the compiler opens it, relative to the working directory when it is
// under it (so that checkouts in different places share keys), absolute
// otherwise. Two headers of equal content in different places have
// different locations: a header is where it was found, since its place
// decides its own quoted includes and its __FILE__.
func (sc *scan) location(path string) string {
	if rel, ok := strings.CutPrefix(path, sc.wd+"/"); ok && sc.wd != "/" {
		return rel
	}
	return path
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
