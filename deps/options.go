package deps

import (
	"path/filepath"
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

// invocation is what the compiler options say about preprocessing.
type invocation struct {
	quoteDirs  []string // -iquote: quoted includes only, after the includer's directory
	angledDirs []string // -I, -isystem, then -idirafter: every include
	macros     []optMacro
	forced     []string // -include and -imacros FILEs, in order
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
	var sys, after []string
	if searchWorkDir {
		inv.angledDirs = append(inv.angledDirs, wd)
	}
	abs := func(d string) string {
		if filepath.IsAbs(d) {
			return filepath.Clean(d)
		}
		return filepath.Join(wd, d)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		opt, val, ok := splitOption(a, args, &i)
		if !ok {
			continue
		}
		switch opt {
		case "-I":
			inv.angledDirs = append(inv.angledDirs, abs(val))
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
		case "-include", "-imacros":
			inv.forced = append(inv.forced, val)
		}
	}
	for _, d := range systemDirs {
		after = append(after, abs(d))
	}
	inv.angledDirs = append(append(inv.angledDirs, sys...), after...)
	return inv
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
			if len(o) > 2 {
				return o, strings.TrimPrefix(a[len(o):], "="), true
			}
			return o, a[len(o):], true
		}
	}
	return "", "", false
}
