package deps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fileNames returns the names of the files (not the absent places) trace
// keys.
func fileNames(trace []Dependency) []string {
	var out []string
	for _, d := range trace {
		if d.Rule != RuleAbsent {
			out = append(out, d.Name)
		}
	}
	return out
}

// TestSearchOrderDropsShadowedUserDirs pins clang-15's RemoveDuplicates on
// the scanner's side: a user directory that is also a system one, by
// identity, is searched at the system one's place; nothing else moves.
func TestSearchOrderDropsShadowedUserDirs(t *testing.T) {
	root := tree(t, map[string]string{"A/x.h": "", "B/x.h": "", "C/x.h": "", "x.h": ""})
	if err := os.Symlink("A", filepath.Join(root, "L")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   string
		system []string // Input.SystemDirs
		wd     bool     // Input.SearchWorkDir
		want   string
	}{
		{"isystem", "-IA -IB -isystem A", nil, false, "B/x.h"},
		{"idirafter", "-IA -IB -idirafter A", nil, false, "B/x.h"},
		{"dot", "-IA/. -IB -isystem A", nil, false, "B/x.h"},
		{"link", "-IA -IB -isystem L", nil, false, "B/x.h"},
		{"system before user in the options", "-isystem A -IA -IB", nil, false, "B/x.h"},
		{"built-in system dir", "-IA -IB", []string{"A"}, false, "B/x.h"},
		{"working directory", "-IB -isystem .", nil, true, "B/x.h"},
		{"user dup of a user dir stays first", "-IA -IB -IA/.", nil, false, "A/x.h"},
		{"system dir elsewhere", "-IA -IB -isystem C", nil, false, "A/x.h"},
		{"system dir missing", "-IA -IB -isystem none", nil, false, "A/x.h"},
		{"quoted dir is no system dir", "-iquote A -IB -IA", nil, false, "B/x.h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Source: []byte("#include <x.h>\n"), WorkDir: root, Args: SplitOptions(tc.args),
				SystemDirs: tc.system, SearchWorkDir: tc.wd, Trigraphs: TrigraphsOff}
			_, tr := mustScan(t, NewScanner(nil), in)
			if got := fileNames(tr); !slices.Equal(got, []string{tc.want}) {
				t.Errorf("%s: keyed %q, want %q", tc.args, got, tc.want)
			}
		})
	}
}

// TestSearchOrderStatsOnlyWithSystemDirs: the order needs stats of the
// directories only where a system directory may shadow a user one; PoCL's
// own options name none, and its scans stat no directory more.
func TestSearchOrderStatsOnlyWithSystemDirs(t *testing.T) {
	root := tree(t, map[string]string{"A/x.h": "", "B/x.h": ""})
	for _, tc := range []struct {
		args     string
		dirStats int
	}{
		{"-IA -IB", 0},
		{"-IA -isystem B", 2},
	} {
		sc := newScan(context.Background(), NewScanner(nil), Input{WorkDir: root, Args: SplitOptions(tc.args)}, root)
		sc.candidates("x.h", true, "")
		dirs := 0
		for _, o := range sc.seen {
			if o.state == stateDir {
				dirs++
			}
		}
		if dirs != tc.dirStats {
			t.Errorf("%s: %d directories observed, want %d", tc.args, dirs, tc.dirStats)
		}
	}
}

// TestSearchOrderFollowsRetargetedLink: which directories are one is part
// of what a memo and a record pin. A link retargeted so that a system
// directory becomes a user one (or stops being one) changes the file
// clang reads, and must change the key, warm or from a record.
func TestSearchOrderFollowsRetargetedLink(t *testing.T) {
	root := tree(t, map[string]string{"A/x.h": "", "B/x.h": "", "C/x.h": ""})
	link := filepath.Join(root, "S")
	retarget := func(to string) {
		t.Helper()
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	in := Input{Source: []byte("#include <x.h>\n"), WorkDir: root, Args: SplitOptions("-IA -IB -isystem S"), Trigraphs: TrigraphsOff}
	store := newMemRecords()
	warm := settledScanner(store)
	for _, step := range []struct{ to, want string }{{"C", "A/x.h"}, {"A", "B/x.h"}, {"C", "A/x.h"}} {
		retarget(step.to)
		_, tr := scanRecorded(t, warm, in)
		if got := fileNames(tr); !slices.Equal(got, []string{step.want}) {
			t.Errorf("S -> %s, warm: keyed %q, want %q", step.to, got, step.want)
		}
		// A new process, served by the record the last scan stored.
		_, tr = scanRecorded(t, settledScanner(store), in)
		if got := fileNames(tr); !slices.Equal(got, []string{step.want}) {
			t.Errorf("S -> %s, from a record: keyed %q, want %q", step.to, got, step.want)
		}
	}
	// The record stored for S -> C holds S's identity: retargeting
	// without a scan in between still misses it.
	retarget("A")
	_, tr := scanRecorded(t, settledScanner(store), in)
	if got := fileNames(tr); !slices.Equal(got, []string{"B/x.h"}) {
		t.Errorf("S -> A after a record of S -> C: keyed %q, want B/x.h", got)
	}
}

// TestSearchOrderUnknownIdentity: a search directory that is there but
// cannot be stat'd leaves which directories are one unknown; the source
// is refused rather than searched in the options' order.
func TestSearchOrderUnknownIdentity(t *testing.T) {
	root := tree(t, map[string]string{"A/x.h": "", "B/x.h": ""})
	s := NewScanner(nil)
	s.fs.stat = func(p string) (os.FileInfo, error) {
		if strings.HasSuffix(p, "/A") {
			return nil, &os.PathError{Op: "stat", Path: p, Err: os.ErrPermission}
		}
		return os.Stat(p)
	}
	in := Input{Source: []byte("#include <x.h>\n"), WorkDir: root, Args: SplitOptions("-IA -IB -isystem B"), Trigraphs: TrigraphsOff}
	if _, _, err := s.Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
		t.Errorf("err = %v, want ErrUncacheable", err)
	}
}

// TestParseArgsEquals: clang-15 takes a joined '=' as part of the value of
// -isystem, -iquote, -idirafter and -imacros; -I=DIR is under the sysroot
// where the options name one; -I=DIR without one, -include=FILE, -D=X and
// -U=X mean other things to NVRTC 13 (which drops the '=') than to clang,
// and are unsure.
func TestParseArgsEquals(t *testing.T) {
	inv := parseArgs([]string{"-isystem=s", "-iquote=q", "-idirafter=a", "-imacros=m.h", "-I", "=sep"}, "/wd", false)
	if want := []string{"/wd/=sep", "/wd/=s", "/wd/=a"}; !slices.Equal(inv.angledDirs, want) || inv.firstSystem != 1 {
		t.Errorf("angled dirs %q (system from %d), want %q (from 1)", inv.angledDirs, inv.firstSystem, want)
	}
	if want := []string{"/wd/=q"}; !slices.Equal(inv.quoteDirs, want) {
		t.Errorf("quote dirs %q, want %q", inv.quoteDirs, want)
	}
	if want := []string{"=m.h"}; !slices.Equal(inv.forced, want) || inv.lineUnsure != "" || inv.searchUnsure != "" {
		t.Errorf("forced %q (unsure %q, %q), want %q and sure", inv.forced, inv.lineUnsure, inv.searchUnsure, want)
	}
	if inv := parseArgs([]string{"-I=inc"}, "/wd", false); inv.searchUnsure == "" {
		t.Error("-I=inc without a sysroot is sure")
	}
	if inv := parseArgs([]string{"-include=f.h"}, "/wd", false); inv.lineUnsure == "" || !slices.Equal(inv.forced, []string{"=f.h"}) {
		t.Errorf("-include=f.h: forced %q, unsure %q", inv.forced, inv.lineUnsure)
	}
	for _, args := range [][]string{{"-D=Y"}, {"-U=Y"}, {"--pre-include=f.h", "-D=Y=1"}} {
		if inv := parseArgs(args, "/wd", false); inv.lineUnsure == "" {
			t.Errorf("%q: sure", args)
		}
	}
	for _, args := range [][]string{{"-D", "=Y"}, {"-DY=1"}, {"--define-macro==Y"}, {"-include", "=f.h"}, {"--pre-include==f.h"}} {
		if inv := parseArgs(args, "/wd", false); inv.lineUnsure != "" {
			t.Errorf("%q: unsure (%s)", args, inv.lineUnsure)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-I=inc", "-isysroot", "/sr"}, "/sr/inc"},
		{[]string{"-isysroot/sr/", "-I=/inc"}, "/sr/inc"},
		{[]string{"-I", "=inc", "--sysroot=/sr"}, "/sr/inc"},
		{[]string{"-I=inc", "--sysroot", "/d", "-isysroot", "/sr"}, "/sr/inc"}, // -isysroot wins
		{[]string{"-I=inc", "--sysroot=/d", "--sysroot=/sr"}, "/sr/inc"},
		{[]string{"-I=inc", "-isysroot", "/d", "-isysroot", "/sr"}, "/sr/inc"},
		{[]string{"-I=inc", "-isysroot", ""}, "/wd/inc"},
		{[]string{"-I", "=inc", "--sysroot="}, "/wd/=inc"},      // an empty --sysroot is none
		{[]string{"-isysroot", "-Ix", "-I=inc"}, "/wd/-Ix/inc"}, // -Ix is the sysroot, no -I
	} {
		inv := parseArgs(tc.args, "/wd", false)
		if !slices.Equal(inv.angledDirs, []string{tc.want}) || inv.searchUnsure != "" {
			t.Errorf("%q: angled dirs %q (unsure %q), want %q", tc.args, inv.angledDirs, inv.searchUnsure, tc.want)
		}
	}
}

// TestDefineLine pins clang-15's -D: the body is cut at the first newline
// or carriage return, and nothing else in it is.
func TestDefineLine(t *testing.T) {
	for text, want := range map[string]string{
		"H":              "H 1",
		"H=":             "H ",
		"H=a.h\n.x":      "H a.h",
		"H=a.h\r.x":      "H a.h",
		"H=a\r\nb":       "H a",
		"H=a\tb\vc\fd":   "H a\tb\vc\fd",
		"H=a\x01b":       "H a\x01b",
		"F(x)=x=1\n2":    "F(x) x=1",
		"H=\n#include x": "H ",
	} {
		if got := defineLine(text); got != want {
			t.Errorf("defineLine(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestLineBreakUnsure: a line break outside a -D body is a line of
// clang's predefines of its own; a carriage return in a body is cut by
// clang and read as a blank by NVRTC 13, unless a newline in it makes
// NVRTC fail.
func TestLineBreakUnsure(t *testing.T) {
	for _, tc := range []struct {
		inv    invocation
		unsure bool
	}{
		{invocation{macros: []optMacro{{true, "H=a.h\n.x"}}}, false},
		{invocation{macros: []optMacro{{true, "H=a.h\t.x"}}}, false},
		{invocation{macros: []optMacro{{true, "H=a.h\r.x"}}}, true},
		{invocation{macros: []optMacro{{true, "H=a.h\r\n.x"}}}, false},
		{invocation{macros: []optMacro{{true, "A\n#include \"e.h\""}}}, true},
		{invocation{macros: []optMacro{{true, "A\n#include \"e.h\"\n=1"}}}, true},
		{invocation{macros: []optMacro{{false, "A\n#include \"e.h\""}}}, true},
		{invocation{macros: []optMacro{{false, "A\r"}}}, true},
		{invocation{forced: []string{"e.h\"\n#include \"x.h"}}, true},
	} {
		if got := lineBreakUnsure(tc.inv) != ""; got != tc.unsure {
			t.Errorf("%+v: unsure %v, want %v", tc.inv, got, tc.unsure)
		}
	}
}

// TestSysrootJoin pins llvm::sys::path::append for two POSIX parts.
func TestSysrootJoin(t *testing.T) {
	for _, tc := range [][3]string{
		{"/sr", "inc", "/sr/inc"},
		{"/sr/", "inc", "/sr/inc"},
		{"/sr", "/inc", "/sr/inc"},
		{"/sr/", "//inc", "/sr/inc"},
		{"", "inc", "inc"},
		{"", "/inc", "/inc"},
		{"/sr", "", "/sr/"},
	} {
		if got := sysrootJoin(tc[0], tc[1]); got != tc[2] {
			t.Errorf("sysrootJoin(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}
