package deps

import (
	"path/filepath"
	"slices"
	"strings"
)

// BaseDirPrefix starts a path that a key holds relative to Input.BaseDir:
// "$BASE/include/x.h". Checkouts of one project in different places, built
// with absolute paths (a build system's -I /home/a/proj/include), then share
// keys, as ccache's base_dir makes them.
const BaseDirPrefix = "$BASE/"

// RelocateArgs returns args as a key should hold them under base: each
// absolute path an option names (-I, -iquote, -isystem, -idirafter,
// -include, -imacros and their long forms) that lies under base is written
// BaseDirPrefix and its path from base, and each such option in the
// two-argument form. It reports false, and returns args unchanged, when
// relocation could hand back a binary built from other inputs: when an
// option may write a path into the binary (debug information, coverage, a
// prefix map) or is one this function does not know, since the compiler
// would then see the place, and the key must too. Relative paths are kept:
// the scan already names what they find relative to the working directory.
func RelocateArgs(args []string, base string) ([]string, bool) {
	if base = usableBase(base); base == "" {
		return args, false
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if opt, val, ok := splitOption(a, args, &i); ok {
			if opt != "-D" && opt != "-U" {
				val = relocate(val, base)
			}
			out = append(out, opt, val)
			continue
		}
		if !placeless(a) {
			return args, false
		}
		out = append(out, a)
	}
	return out, true
}

// usableBase returns base cleaned, or "" when no path can be relocated
// under it: it is unset, relative, or the root (under which every place
// would lose its name).
func usableBase(base string) string {
	if base == "" {
		return ""
	}
	if base = filepath.Clean(base); !filepath.IsAbs(base) || base == "/" {
		return ""
	}
	return base
}

// relocate returns path relative to base with BaseDirPrefix when it is
// absolute, under base and free of "..": a ".." after a symbolic link
// resolves physically, so a cleaned path could name another place.
func relocate(path, base string) string {
	if !filepath.IsAbs(path) || slices.Contains(strings.Split(path, "/"), "..") {
		return path
	}
	rel, ok := strings.CutPrefix(filepath.Clean(path), base+"/")
	if !ok {
		return path
	}
	return BaseDirPrefix + rel
}

// placelessPrefixes start the options known to write no path of the build
// into what the compiler produces: language and optimization settings of
// OpenCL C, clang and NVRTC.
var placelessPrefixes = []string{
	"-cl-", "-O", "-W", "-w", "-std=", "--std=", "-x", "-arch", "--gpu-architecture",
	"-default-device", "--device-as-default-execution-space", "-rdc", "--relocatable-device-code",
	"-dlto", "--dlto", "-ftz", "--ftz", "-prec-div", "--prec-div", "-prec-sqrt", "--prec-sqrt",
	"-fmad", "--fmad", "-use_fast_math", "--use_fast_math", "-restrict", "--restrict",
	"-ewp", "--extensible-whole-program", "-maxrregcount", "--maxrregcount", "-pch", "--pch",
	"-ffast-math", "-fno-fast-math", "-ffp-contract", "-fdenormal-fp-math",
}

// placeless reports whether option a is known to put no path in the
// compiler's output.
func placeless(a string) bool {
	for _, p := range placelessPrefixes {
		if strings.HasPrefix(a, p) {
			return true
		}
	}
	return false
}

// fileMacros are the predefined macros (and clang's __builtin_FILE, a
// function of the same use) that expand to a file's path: where
// a source expands one, the compiler writes places into the binary, and a
// key must name them as the compiler opened them.
var fileMacros = []string{"__FILE__", "__FILE_NAME__", "__BASE_FILE__", "__builtin_FILE"}

// relocateTrace names the trace's dependencies under Input.BaseDir
// relative to it, once the whole source is scanned and known to expand no
// path macro.
func (sc *scan) relocateTrace() {
	base := usableBase(sc.in.BaseDir)
	if base == "" || sc.namesFiles {
		return
	}
	for i, d := range sc.trace {
		if d.Rule == RuleClock || d.Name != d.Path {
			continue // relative to the working directory already, or no place
		}
		sc.trace[i].Name = relocate(d.Path, base)
	}
}
