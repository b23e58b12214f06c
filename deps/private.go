package deps

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// A process's private directory (Input.PrivateDir) is named in its
// dependency records by privateRoot, so that a record serves every process
// whose input differs only in that directory: each gives its own
// directory back to the places the record lists under it. The re-rooting
// is exact only where a scan under another directory would have made the
// same observations with that directory in their place, which holds for
// the places a scan probes as MainDir/NAME for the main source's quoted
// includes: the scan joins the names as text. So a scan stores a portable
// record only when every observation under the directory is such a probe,
// found missing (portable); anything else there stores none.

// privateRoot stands for Input.PrivateDir in a record. It holds a NUL,
// which no path a scan stats can hold (the system refuses such a path),
// and a scan whose paths begin with it anyway stores no record.
const privateRoot = "\x00private"

// usablePrivate returns in.PrivateDir when it can be re-rooted: absolute,
// clean, not the root, and the directory MainDir names (wd standing for
// the working directory); "" otherwise.
func usablePrivate(in Input, wd string) string {
	p := in.PrivateDir
	if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
		return ""
	}
	main := in.MainDir
	if !filepath.IsAbs(main) {
		main = wd + "/" + main
	}
	if main != p {
		return ""
	}
	return p
}

// under reports whether path lies in dir (or is dir), as text.
func under(path, dir string) bool {
	rest, ok := strings.CutPrefix(path, dir)
	return ok && (rest == "" || rest[0] == '/')
}

// idMainDir is MainDir as the id of in holds it: with PrivateDir, when
// set, written as privateRoot, so that the records of processes whose
// private directories differ share one id.
func idMainDir(in Input) string {
	if in.PrivateDir != "" && under(in.MainDir, in.PrivateDir) {
		return privateRoot + in.MainDir[len(in.PrivateDir):]
	}
	return in.MainDir
}

// namesPrivate reports whether a field of in other than MainDir and
// PrivateDir (Source aside: its text reaches the file system only through
// the includes the scan follows, which it checks itself) names the
// directory p: a search directory, a declared file or the working
// directory under it would make observations there that no other process
// makes under its own.
func namesPrivate(in Input, wd, p string) bool {
	in2 := func(s string) bool { return strings.Contains(s, p) }
	if in2(in.Path) || in2(in.BaseDir) || in2(wd) {
		return true
	}
	for _, l := range [][]string{in.Args, in.Depends, in.Builtins, in.SystemDirs, in.CompilerHeaders, in.CompilerMacros} {
		if slices.ContainsFunc(l, in2) {
			return true
		}
	}
	return false
}

// portable reports whether m, the memo of a scan under private directory
// p whose every observation under p was a probe of the main source's
// includes (sc.private stays set), may be written as a record that names p
// by privateRoot: every place under p missing, every dependency there
// absent and named by its path, and nothing already named like privateRoot.
func (m *memo) portable(p string) bool {
	for _, o := range m.seen {
		if strings.HasPrefix(o.path, privateRoot) || under(o.path, p) && o.state != stateMissing {
			return false
		}
	}
	for _, d := range m.dependencies() {
		if strings.HasPrefix(d.Path, privateRoot) || strings.HasPrefix(d.Name, privateRoot) {
			return false
		}
		if under(d.Path, p) && (d.Rule != RuleAbsent || d.Name != d.Path) {
			return false
		}
	}
	return true
}

// reroot names every place of m under from under to instead, in place,
// and reports whether each was a missing place or an absent dependency
// named by its path, as portable lets a record hold under privateRoot: a
// record that says otherwise is not used.
func (m *memo) reroot(from, to string) bool {
	// A record's trace is made before the paths change, from the paths it
	// was recorded with; m, not yet shared, then holds it as its own.
	m.trace, m.lazy = m.dependencies(), nil
	for i, o := range m.seen {
		if under(o.path, from) {
			if o.state != stateMissing {
				return false
			}
			m.seen[i].path = to + o.path[len(from):]
		}
	}
	for i, d := range m.trace {
		if under(d.Path, from) || under(d.Name, from) {
			if d.Rule != RuleAbsent || d.Name != d.Path {
				return false
			}
			m.trace[i].Path = to + d.Path[len(from):]
			m.trace[i].Name = m.trace[i].Path
		}
	}
	return true
}

// portableCopy returns a copy of m, portable under private directory p,
// whose places under p are named under privateRoot, for a record.
func (m *memo) portableCopy(p string) *memo {
	c := &memo{seen: slices.Clone(m.seen), trace: slices.Clone(m.dependencies()), headers: m.headers, date: m.date}
	c.reroot(p, privateRoot)
	return c
}

// rerootRecord names the places of m, the record of in (wd standing for
// its working directory), under in.PrivateDir where the record names them
// under privateRoot. A record of an input whose private directory cannot
// be re-rooted is never written; one found anyway is refused, as is one
// whose places there were not all missing.
func rerootRecord(m *memo, in Input, wd string) error {
	p := usablePrivate(in, wd)
	if p == "" {
		return fmt.Errorf("%w: the input's private directory cannot be re-rooted", errBadRecord)
	}
	if !m.reroot(privateRoot, p) {
		return fmt.Errorf("%w: a place under the private directory is not a missing one", errBadRecord)
	}
	return nil
}
