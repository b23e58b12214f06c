package deps_test

// Differential regression tests of the search path against clang-15: the
// order clang gives duplicate search directories (a user directory that
// is also a system one moves to the system one's place). The cases run
// through the differential harness (compare). clang-15 missing skips
// them, and fails them under KCACHE_REQUIRE_REAL=1.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache/deps"
)

// writeTree writes files and symbolic links (name to target) under root.
func writeTree(t *testing.T, root string, files, links map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// keys reports whether trace holds the file named name.
func keys(trace []deps.Dependency, name string) bool {
	return slices.ContainsFunc(trace, func(d deps.Dependency) bool { return d.Rule != deps.RuleAbsent && d.Name == name })
}

// TestSearchPathAsClang compiles as PoCL does (-I. first) with options
// that name one directory twice. Each case must come out as want; reads
// is a file clang reads, which the key must hold.
func TestSearchPathAsClang(t *testing.T) {
	clang := requireClang(t)
	// PoCL's -I. comes first: x.h in the root shadows every other.
	xs := map[string]string{"m.cl": "#include <x.h>\n", "A/x.h": "//A\n", "B/x.h": "//B\n", "C/x.h": "//C\n"}
	dot := map[string]string{"m.cl": "#include <x.h>\n", "B/x.h": "//B\n", "x.h": "//dot\n"}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		links   map[string]string
		main    string
		options string
		want    verdict
		reads   string
	}{
		// clang drops -IA for -isystem A, -idirafter A, or A by
		// another name, and searches B first.
		{"I-isystem", xs, nil, "m.cl", "-IA -IB -isystem A", exact, "B/x.h"},
		{"I-idirafter", xs, nil, "m.cl", "-IA -IB -idirafter A", exact, "B/x.h"},
		{"I-isystem-dot", xs, nil, "m.cl", "-IA -IB -isystem A/.", exact, "B/x.h"},
		{"I-isystem-link", xs, map[string]string{"L": "A"}, "m.cl", "-IA -IB -isystem L", exact, "B/x.h"},
		{"link-I-isystem", xs, map[string]string{"L": "A"}, "m.cl", "-IL -IB -isystem A", exact, "B/x.h"},
		{"isystem-first-in-options", xs, nil, "m.cl", "-isystem A -IA -IB", exact, "B/x.h"},
		// PoCL's own -I. is a user directory too.
		{"pocl-dot-isystem", dot, nil, "m.cl", "-IB -isystem .", exact, "B/x.h"},
		{"pocl-dot-idirafter", dot, nil, "m.cl", "-IB -idirafter ROOT", exact, "B/x.h"},
		// Nothing else moves.
		{"I-twice", xs, nil, "m.cl", "-IA -IB -IA/.", exact, "A/x.h"},
		{"isystem-elsewhere", xs, nil, "m.cl", "-IA -IB -isystem C", exact, "A/x.h"},
		{"isystem-missing", xs, nil, "m.cl", "-IA -IB -isystem none", exact, "A/x.h"},
		{"isystem-twice", xs, nil, "m.cl", "-isystem A -isystem B -idirafter A", exact, "A/x.h"},
		{"iquote-and-I", map[string]string{"m.cl": "#include \"x.h\"\n", "A/x.h": "//A\n", "B/x.h": "//B\n"},
			nil, "m.cl", "-iquote A -IB -IA", exact, "A/x.h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "root")
			writeTree(t, root, tc.files, tc.links)
			src, err := os.ReadFile(filepath.Join(root, tc.main))
			if err != nil {
				t.Fatal(err)
			}
			opts := strings.ReplaceAll(tc.options, "ROOT", root)
			run := clangRun{clang: clang, wd: root, options: opts, main: filepath.Join(root, tc.main)}
			o := compare(deps.NewScanner(nil), run, src, opts, root, dir)
			if o.v != tc.want {
				t.Fatalf("%s: %s, want %s (missed %q; %s)", opts, verdictNames[o.v], verdictNames[tc.want], o.missed, o.detail)
			}
			if o.v == exact && !keys(o.trace, tc.reads) {
				t.Errorf("%s: the key holds no %s", opts, tc.reads)
			}
			if o.v == refused {
				files, _, err := run.deps(dir)
				if err != nil || !slices.Contains(files, filepath.Join(root, tc.reads)) {
					t.Errorf("%s: clang reads %q (%v), not %s: the case shows nothing", opts, files, err, tc.reads)
				}
			}
		})
	}
}
