package deps

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// SplitOptions splits a compiler option string into arguments the way a
// shell would: on blanks, with single quotes taking everything literally,
// double quotes grouping blanks, and a backslash escaping the next
// character outside single quotes. OpenCL runtimes split build options so
// (hashcat passes -D "XM2S(x)=#x").
func SplitOptions(options string) []string {
	var (
		out     []string
		cur     strings.Builder
		inArg   bool
		quote   byte
		escaped bool
	)
	for i := 0; i < len(options); i++ {
		c := options[i]
		switch {
		case escaped:
			cur.WriteByte(c)
			escaped = false
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\\':
			escaped, inArg = true, true
		case quote == '"':
			if c == '"' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, inArg = c, true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			if inArg {
				out = append(out, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	if inArg {
		out = append(out, cur.String())
	}
	return out
}

// Driver says how an OpenCL driver splits a build options string into the
// arguments its compiler parses. Drivers differ: PoCL keeps single quotes
// and backslashes and turns double quotes into blanks, where a shell
// would remove them all, so a split that is not the driver's may search
// other directories and define other macros than the compiler does.
type Driver int

const (
	// DriverShell splits as a POSIX shell does (SplitOptions): for
	// options that kcache itself is given on a command line, which become
	// an argument vector (NVRTC's).
	DriverShell Driver = iota
	// DriverPoCL splits as PoCL 3.1 does (see splitPoCL).
	DriverPoCL
	// DriverUnknown splits on blanks, for a driver whose treatment of
	// quotes and backslashes is not known (NVIDIA's OpenCL driver, whose
	// source is not public, and any other): options that hold any of them
	// have no known split.
	DriverUnknown
)

// SplitDriverOptions splits options as the driver d does. Where the split
// is not known exactly (DriverUnknown with quotes or backslashes, PoCL
// with an unbalanced double quote), it fails with an error wrapping
// ErrUncacheable: the caller builds without storing, since a key made
// from a guessed split could miss the headers and macros the compiler
// sees.
func SplitDriverOptions(d Driver, options string) ([]string, error) {
	switch d {
	case DriverShell:
		return SplitOptions(options), nil
	case DriverPoCL:
		return splitPoCL(options)
	}
	if strings.ContainsAny(options, `"'\`) {
		return nil, fmt.Errorf("%w: how the driver splits the quotes or backslashes of %q is not known", ErrUncacheable, options)
	}
	return strings.FieldsFunc(options, isCSpace), nil
}

// splitPoCL splits options as PoCL 3.1 does. clBuildProgram's options
// pass through two splits (lib/CL/pocl_build.c process_options, then
// lib/CL/pocl_llvm_build.cc, after PoCL's own options are put around
// them), each of which first replaces the blanks (' ' only) between
// double quotes by a byte the string does not hold
// (pocl_escape_quoted_whitespace), splits, and puts the blanks back. The
// first splits at ' ' and joins the pieces with ' ' again, which changes
// nothing the second split sees; the second splits at every C isspace
// byte (std::istringstream), so a tab or newline splits even between
// double quotes, and then turns every double quote into a blank. Single
// quotes and backslashes are kept as they are: -I'inc' searches a
// directory named 'inc', quotes included, and -D "X(a)=#a" defines
// " X(a)=#a ", which clang reads as X(a) defined as #a.
func splitPoCL(options string) ([]string, error) {
	if strings.Count(options, `"`)%2 != 0 {
		// The open quote runs on into the options PoCL appends, which
		// differ between devices: the last argument is not known.
		return nil, fmt.Errorf("%w: PoCL build options with an unbalanced double quote: %q", ErrUncacheable, options)
	}
	if quotedBlank(options) && !hasUnusedByte(options) {
		return nil, fmt.Errorf("%w: PoCL rejects options that use every byte it could put for a quoted blank", ErrUncacheable)
	}
	var (
		out     []string
		cur     []byte
		inArg   bool
		inQuote bool
	)
	for i := 0; i < len(options); i++ {
		switch c := options[i]; {
		case c == '"':
			inQuote = !inQuote
			cur, inArg = append(cur, ' '), true
		case c == ' ' && inQuote:
			cur = append(cur, ' ')
		case isCSpace(rune(c)):
			if inArg {
				out, cur, inArg = append(out, string(cur)), cur[:0], false
			}
		default:
			cur, inArg = append(cur, c), true
		}
	}
	if inArg {
		out = append(out, string(cur))
	}
	return out, nil
}

// quotedBlank reports whether s has a ' ' between double quotes.
func quotedBlank(s string) bool {
	in := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			in = !in
		case s[i] == ' ' && in:
			return true
		}
	}
	return false
}

// hasUnusedByte reports whether a byte from '#' to DEL is missing from s:
// PoCL replaces quoted blanks by the first such byte
// (pocl_find_unused_char) and fails the build where there is none.
func hasUnusedByte(s string) bool {
	for c := byte(35); c < 128; c++ {
		if strings.IndexByte(s, c) < 0 {
			return true
		}
	}
	return false
}

// isCSpace reports whether c is a blank to C's isspace in the "C" locale.
func isCSpace(c rune) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// invocation is what the compiler options say about preprocessing.
type invocation struct {
	quoteDirs []string // -iquote: quoted includes only, after the includer's directory
	// angledDirs are every include's directories in the order of clang's
	// groups: the user's (the working directory of Input.SearchWorkDir,
	// then -I), then from firstSystem on the system ones (-isystem, then
	// -idirafter, then Input.SystemDirs). clang drops a user directory
	// that is also a system one (searchOrder).
	angledDirs  []string
	firstSystem int
	// searched is angledDirs in the order the compiler searches them, once
	// settled is set (searchOrder): it depends on stats of the directories.
	searched []string
	settled  bool
	macros   []optMacro
	// forced are the -imacros FILEs, then the -include FILEs, each in
	// order: clang reads every -imacros file before the first -include
	// (InitializePreprocessor), wherever the options put them.
	forced []string
	// searchUnsure and lineUnsure say why compilers read a search
	// directory, or a line of the predefines (-include, -D, -U), of the
	// options differently ("" where they agree).
	searchUnsure, lineUnsure string
}

// predefinesUnsure says why the compiler may read the options' lines of
// its predefines buffer otherwise than the scan reads each option ("" where
// it reads them alike). clang writes each -D, -U, -include and -imacros
// as a line of its own (#define NAME BODY, #undef NAME, #include "FILE")
// and lexes the lines as one text, in the source's language: a block
// comment that an option opens runs on over the options after it
// (-DX=/* -DH=b -DY=*/ leaves H undefined), and where trigraphs are
// replaced an option that ends in ??/ takes the next line into its own,
// ??= in a body is a # (-DS(x)=??=x stringizes) and -include x??=.h
// opens x#.h. The scan reads each option apart, as written. A line break
// in an option is a line of the buffer of its own (lineBreakUnsure), and
// -include=FILE, -D=X and -U=X mean other things to NVRTC than to clang
// (joinedEquals).
func predefinesUnsure(inv invocation, tri Trigraphs) string {
	if inv.lineUnsure != "" {
		return inv.lineUnsure
	}
	texts := slices.Clone(inv.forced)
	for _, o := range inv.macros {
		texts = append(texts, o.text)
	}
	for _, text := range texts {
		switch {
		case strings.Contains(text, "/*"):
			return fmt.Sprintf("option %q may open a comment that runs on over the options after it", text)
		case tri != TrigraphsOff && hasTrigraph([]byte(text)):
			return fmt.Sprintf("option %q holds a trigraph, which the compiler may replace in its predefines", text)
		}
	}
	return lineBreakUnsure(inv)
}

// lineBreakUnsure says why an option's line break may make the compiler
// read other lines than the scan ("" where none does). clang cuts a -D
// body at its first line break (defineLine), but writes the rest of the
// option text as it stands: a break in a -D's name, a -D without a body,
// a -U or a forced file's name starts a line of the predefines buffer of
// its own, a directive of the option's making (-D'A<newline>#include
// "e.h"' includes e.h, checked with clang-15). NVRTC 13 fails on a -D or
// -U that holds a newline, but reads a carriage return as a blank
// (-DH=a.h<CR>.x names "a.h .x", where clang cuts it to a.h): measured
// on the H200, so a body with a carriage return and no newline has no one
// reading.
func lineBreakUnsure(inv invocation) string {
	for _, f := range inv.forced {
		if strings.ContainsAny(f, "\n\r") {
			return fmt.Sprintf("forced include %q holds a line break, which makes a line of the compiler's predefines of its own", f)
		}
	}
	for _, o := range inv.macros {
		head, body := o.text, ""
		if o.define {
			head, body, _ = strings.Cut(o.text, "=")
		}
		if strings.ContainsAny(head, "\n\r") {
			return fmt.Sprintf("option %q holds a line break outside a definition's body, which makes a line of the compiler's predefines of its own", o.text)
		}
		if strings.ContainsRune(body, '\r') && !strings.ContainsRune(body, '\n') {
			return fmt.Sprintf("option %q holds a carriage return, at which clang ends the definition and NVRTC reads a blank", o.text)
		}
	}
	return ""
}

// optMacro is one -D or -U option.
type optMacro struct {
	define bool
	text   string // NAME[(params)][=VALUE] for -D, NAME for -U
}

// parseArgs reads the preprocessing options of args; relative directories
// are resolved against wd, as the compiler resolves them.
func parseArgs(args []string, wd string, searchWorkDir bool, systemDirs ...string) invocation {
	var inv invocation
	var user, sys, after, includes []string
	if searchWorkDir {
		user = append(user, wd)
	}
	// Joined, not cleaned: "-I lnk/.." through a symbolic link is the
	// link target's parent, as the kernel resolves it for the compiler.
	abs := func(d string) string {
		if t := strings.TrimRight(d, "/"); t != "" {
			d = t
		}
		if filepath.IsAbs(d) {
			return d
		}
		return wd + "/" + d
	}
	root, hasRoot := sysroot(args)
	for i := 0; i < len(args); i++ {
		a := args[i]
		opt, val, ok := splitOption(a, args, &i)
		if !ok {
			sysrootOption(args, &i) // its value is no option of its own
			continue
		}
		switch opt {
		case "-I":
			user = append(user, abs(userDir(a, val, root, hasRoot, &inv)))
		case "-iquote":
			inv.quoteDirs = append(inv.quoteDirs, abs(val))
		case "-isystem":
			sys = append(sys, abs(val))
		case "-idirafter":
			after = append(after, abs(val))
		case "-D":
			inv.macros = append(inv.macros, optMacro{define: true, text: val})
		case "-U":
			inv.macros = append(inv.macros, optMacro{text: val})
		case "-imacros":
			inv.forced = append(inv.forced, val)
		case "-include":
			includes = append(includes, val)
		}
		if joinedEquals(a, opt) && inv.lineUnsure == "" {
			inv.lineUnsure = fmt.Sprintf("option %q: clang reads the value with its '=', NVRTC 13 without it", a)
		}
	}
	inv.forced = append(inv.forced, includes...)
	for _, d := range systemDirs {
		after = append(after, abs(d))
	}
	inv.firstSystem = len(user)
	inv.angledDirs = append(append(user, sys...), after...)
	return inv
}

// joinedEquals reports whether option a is opt joined to a value that
// starts with '=' where clang and NVRTC 13 read that value otherwise
// (measured on the H200): NVRTC drops the '=' of -include=FILE (clang
// opens "=FILE"), of -D=X (it defines X as 1, clang defines X empty) and
// of -U=X (it undefines X; clang rejects the option). NVRTC's separate
// values keep their '=', and it rejects -imacros, -isystem, -iquote and
// -idirafter in every form; for -I see userDir.
func joinedEquals(a, opt string) bool {
	switch opt {
	case "-include", "-D", "-U":
		return strings.HasPrefix(a, opt+"=")
	}
	return false
}

// userDir returns the directory clang searches for -I option a, whose
// value is val. A value that starts with '=' is under the sysroot where
// the options name one (clang-15's ParseHeaderSearchArgs; -isystem,
// -iquote and -idirafter take their '=' as part of the name, with or
// without a sysroot), and otherwise the name with its '='. NVRTC 13 takes
// the '=' of -I=DIR for the option's (it searches DIR; measured on the
// H200), so that form without a sysroot is unsure (inv.searchUnsure).
func userDir(a, val, root string, hasRoot bool, inv *invocation) string {
	rest, eq := strings.CutPrefix(val, "=")
	switch {
	case eq && hasRoot:
		return sysrootJoin(root, rest)
	case eq && strings.HasPrefix(a, "-I=") && inv.searchUnsure == "":
		inv.searchUnsure = fmt.Sprintf("option %q: clang searches the directory named with the '=', NVRTC 13 the one named without it", a)
	}
	return val
}

// sysroot returns the directory that the options make clang's sysroot for
// -I=DIR, and whether they name one: the last -isysroot, or else the last
// --sysroot where it is not empty (clang's driver gives its front end that
// as -isysroot unless it has one; the front end itself rejects
// --sysroot). Checked with clang-15, its driver and its front end.
func sysroot(args []string) (string, bool) {
	var isysroot, driver string
	has := false
	for i := 0; i < len(args); i++ {
		if _, _, ok := splitOption(args[i], args, &i); ok {
			continue
		}
		opt, val, ok := sysrootOption(args, &i)
		switch {
		case !ok:
		case opt == "-isysroot":
			isysroot, has = val, true
		default:
			driver = val
		}
	}
	if has {
		return isysroot, true
	}
	return driver, driver != ""
}

// sysrootOption recognises -isysroot DIR, -isysrootDIR, --sysroot=DIR and
// --sysroot DIR at args[*i], advancing *i past a separate value.
func sysrootOption(args []string, i *int) (opt, val string, ok bool) {
	a := args[*i]
	if a == "-isysroot" || a == "--sysroot" {
		if *i+1 >= len(args) {
			return "", "", false
		}
		*i++
		return a, args[*i], true
	}
	if v, ok := strings.CutPrefix(a, "--sysroot="); ok {
		return "--sysroot", v, true
	}
	if v, ok := strings.CutPrefix(a, "-isysroot"); ok {
		return "-isysroot", v, true
	}
	return "", "", false
}

// sysrootJoin is llvm::sys::path::append(root, rest) for POSIX paths, as
// clang makes -I=REST under the sysroot: one '/' between them, none added
// where either side has one, and REST alone under an empty sysroot.
func sysrootJoin(root, rest string) string {
	switch {
	case root == "":
		return rest
	case strings.HasSuffix(root, "/"):
		return root + strings.TrimLeft(rest, "/")
	case strings.HasPrefix(rest, "/"):
		return root + rest
	}
	return root + "/" + rest
}

// valueOptions are the options that take a value, joined (-IDIR) or as the
// next argument (-I DIR). Longer names come first so -include is not read
// as -I "nclude" and -isystem not as -i.
var valueOptions = []string{"-idirafter", "-isystem", "-iquote", "-include", "-imacros", "-I", "-D", "-U"}

// longOptions are NVRTC's and nvcc's spellings of the same options
// (--include-path=DIR or --include-path DIR).
var longOptions = map[string]string{
	"--include-path":   "-I",
	"--define-macro":   "-D",
	"--undefine-macro": "-U",
	"--pre-include":    "-include",
	"--system-include": "-isystem",
}

// splitOption recognises one value option at args[*i], advancing *i past
// a separate value.
func splitOption(a string, args []string, i *int) (opt, val string, ok bool) {
	if strings.HasPrefix(a, "--") {
		name, val, joined := strings.Cut(a, "=")
		opt, ok := longOptions[name]
		switch {
		case !ok:
			return "", "", false
		case joined:
			return opt, val, true
		case *i+1 < len(args):
			*i++
			return opt, args[*i], true
		}
		return "", "", false
	}
	for _, o := range valueOptions {
		if a == o {
			if *i+1 >= len(args) {
				return "", "", false
			}
			*i++
			return o, args[*i], true
		}
		if strings.HasPrefix(a, o) {
			// A joined '=' is part of the value: clang-15 opens "=f.h"
			// for -include=f.h and searches "=inc" for -isystem=inc
			// (for -I=inc see userDir).
			return o, a[len(o):], true
		}
	}
	return "", "", false
}
