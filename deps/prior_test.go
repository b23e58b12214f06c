package deps

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A definition inside a conditional may not have been made: where none of
// a name's definitions is certain, the name keeps its prior value (none,
// or the compiler's own). These tests hold the scanner to clang-15's
// preprocessor on each shape, and check that the key then changes with
// the file the compiler really reads.

// priorFiles are the headers every case below may name: one.h and two.h
// are what the definitions give, V.h what the bare name gives.
var priorFiles = map[string]string{"one.h": "", "two.h": "", "V.h": "", "__V.h": ""}

// clangReads returns the base names of the files clang -M lists for src
// compiled in root with args.
func clangReads(t *testing.T, root, src string, args ...string) []string {
	t.Helper()
	clang, err := exec.LookPath("clang-15")
	if err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatal("KCACHE_REQUIRE_REAL=1 but clang-15 is missing (apt-get install clang-15)")
		}
		t.Skip("no clang-15 (apt-get install clang-15)")
	}
	main := filepath.Join(root, "main.c")
	if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(clang, append(append([]string{"-x", "c", "-I."}, args...), "-M", "main.c")...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("clang -M: %v: %s", err, out)
	}
	var names []string
	for _, f := range strings.Fields(strings.ReplaceAll(string(out), "\\\n", " "))[1:] {
		if f != "main.c" {
			names = append(names, filepath.Base(f))
		}
	}
	return names
}

// keyedNames returns the base names of the files a scan of src keys.
func keyedNames(t *testing.T, in Input) []string {
	t.Helper()
	_, trace := mustScan(t, NewScanner(nil), in)
	var names []string
	for _, d := range trace {
		if d.Rule != RuleAbsent && d.Rule != RuleNotPredefined {
			names = append(names, filepath.Base(d.Path))
		}
	}
	return names
}

func TestPriorValueOfBranchDefinitions(t *testing.T) {
	for _, c := range []struct {
		name, src string
		files     map[string]string
		args      string
		// exact: the key must not hold V.h where clang does not read
		// it (the shapes whose definitions are certain).
		exact bool
	}{
		{name: "defined under #ifdef", src: "#ifdef USE\n#define V one\n#endif\n#include XS(V.h)\n"},
		{name: "defined under #ifdef, option given", src: "#ifdef USE\n#define V one\n#endif\n#include XS(V.h)\n", args: "-DUSE"},
		{name: "defined by a header included under #ifdef", src: "#ifdef USE\n#include \"d.h\"\n#endif\n#include XS(V.h)\n",
			files: map[string]string{"d.h": "#define V one\n"}},
		{name: "#elif chain without #else", src: "#if defined(A)\n#define V one\n#elif defined(B)\n#define V two\n#endif\n#include XS(V.h)\n"},
		{name: "#undef in a branch", src: "#define V one\n#ifdef Y\n#undef V\n#endif\n#include XS(V.h)\n", args: "-DY"},
		{name: "#if and #else both define", src: "#ifdef A\n#define V one\n#else\n#define V two\n#endif\n#include XS(V.h)\n", exact: true},
		{name: "nested complete chains", src: "#ifdef A\n#ifdef B\n#define V one\n#else\n#define V two\n#endif\n#else\n#define V two\n#endif\n#include XS(V.h)\n", exact: true},
		{name: "include guard, included twice", src: "#include \"g.h\"\n#include \"g.h\"\n#include XS(V.h)\n", exact: true,
			files: map[string]string{"g.h": "#ifndef G_H\n#define G_H\n#define V one\n#endif\n"}},
		{name: "include guard spelled #if !defined", src: "#include \"g.h\"\n#include XS(V.h)\n", exact: true,
			files: map[string]string{"g.h": "#if !defined(G_H)\n#define G_H\n#define V one\n#endif\n"}},
		{name: "guard name defined before", src: "#define G_H\n#include \"g.h\"\n#include XS(V.h)\n",
			files: map[string]string{"g.h": "#ifndef G_H\n#define G_H\n#define V one\n#endif\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{}
			for _, m := range []map[string]string{priorFiles, c.files} {
				for k, v := range m {
					files[k] = v
				}
			}
			root := tree(t, files)
			src := strMacros + c.src
			want := clangReads(t, root, src, strings.Fields(c.args)...)
			in := Input{Source: []byte(src), Path: filepath.Join(root, "main.c"), WorkDir: root, Args: SplitOptions(c.args),
				SearchWorkDir: true, Trigraphs: TrigraphsOn}
			got := keyedNames(t, in)
			for _, f := range want {
				if !slices.Contains(got, f) {
					t.Errorf("clang reads %s; the key holds %q", f, got)
				}
			}
			if c.exact && slices.Contains(got, "V.h") && !slices.Contains(want, "V.h") {
				t.Errorf("key holds V.h, which clang does not read: %q", got)
			}
			// The header the computed include names, as clang reads it,
			// is in the key: editing it changes the key.
			for _, f := range want {
				if _, named := priorFiles[f]; named {
					keyChanges(t, in, func() { write(t, filepath.Join(root, f), "/* edited */\n") })
				}
			}
		})
	}
}

// TestPriorValueOfReservedNames: a name the compiler may predefine keeps
// the compiler's value where none of its definitions is certain. That
// value is unknown: the source is uncacheable unless the caller verifies
// the assumption that there is none (Input.VerifiesPredefines), which the
// trace then lists.
func TestPriorValueOfReservedNames(t *testing.T) {
	root := tree(t, priorFiles)
	src := strMacros + "#if defined(A)\n#define __V one\n#elif defined(B)\n#define __V two\n#endif\n#include XS(__V.h)\n"
	in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
	if _, _, err := NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
		t.Fatalf("without verification: err = %v, want ErrUncacheable", err)
	}
	in.VerifiesPredefines = true
	_, trace := mustScan(t, NewScanner(nil), in)
	var assumed, keyed []string
	for _, d := range trace {
		switch d.Rule {
		case RuleNotPredefined:
			assumed = append(assumed, d.Path)
		case RuleAbsent:
		default:
			keyed = append(keyed, filepath.Base(d.Path))
		}
	}
	if !slices.Equal(assumed, []string{"__V"}) {
		t.Errorf("assumed %q, want [__V]", assumed)
	}
	for _, f := range []string{"one.h", "two.h", "__V.h"} {
		if !slices.Contains(keyed, f) {
			t.Errorf("the key lacks %s: %q", f, keyed)
		}
	}
	// A definition that dominates leaves nothing to assume.
	in.Source = []byte(strMacros + "#define __V one\n#include XS(__V.h)\n")
	if _, trace := mustScan(t, NewScanner(nil), in); slices.ContainsFunc(trace, func(d Dependency) bool { return d.Rule == RuleNotPredefined }) {
		t.Errorf("an unconditional definition made an assumption: %q", found(root, trace))
	}
	// A name the caller says the compiler defines is never assumed away.
	in.Source, in.CompilerMacros = []byte(src), []string{"__V"}
	if _, _, err := NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
		t.Errorf("a name of CompilerMacros: err = %v, want ErrUncacheable", err)
	}
}

// TestPriorValueInFileTests: a name defined only in a branch keeps its
// prior value in the operand of a __has_include made through a macro as
// well: creating the file the bare name gives changes the key.
func TestPriorValueInFileTests(t *testing.T) {
	root := tree(t, map[string]string{"one.h": ""})
	src := strMacros + "#define HAS(x) __has_include(x)\n#ifdef USE\n#define V one\n#endif\n" +
		"#if defined(A) && HAS(XS(V.h)) || __clang_major__ > 3\n#endif\n"
	in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
	keyChanges(t, in, func() { write(t, filepath.Join(root, "V.h"), "") })
}

// TestPriorValueAfterUnseenHeader: once an include was found nowhere the
// scan looks (on a compiler that may search elsewhere), that header may
// have defined a name the scanned files define only in branches: its
// value there cannot be known.
func TestPriorValueAfterUnseenHeader(t *testing.T) {
	root := tree(t, priorFiles)
	src := strMacros + "#include \"elsewhere.h\"\n#ifdef A\n#define V one\n#endif\n#include XS(V.h)\n"
	in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
	if _, _, err := NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, ErrUncacheable) {
		t.Errorf("err = %v, want ErrUncacheable", err)
	}
	in.CompleteSearchPath = true // the include fails the build where it is live
	if _, _, err := NewScanner(nil).Scan(context.Background(), in); err != nil {
		t.Errorf("with a complete search path: %v", err)
	}
}

// TestOptionDecidesListed: where the caller verifies the compiler's own
// macros, an option's -D or -U of a name the compiler may predefine is an
// assumption the trace lists (RuleOptionDecides: NVRTC defines some such
// names after the options), each name once; an option for an ordinary
// name is not, nor any where the caller verifies nothing, nor where the
// compiler's definitions come after the options anyway.
func TestOptionDecidesListed(t *testing.T) {
	root := tree(t, map[string]string{"a.h": "", "b.h": ""})
	src := "#if __CUDA_ARCH__ == 1\n#include \"a.h\"\n#else\n#include \"b.h\"\n#endif\n"
	in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn, VerifiesPredefines: true,
		Args:           []string{"-D__CUDA_ARCH__=1", "-U__CUDACC__", "-DPLAIN=2", "-D__CUDA_ARCH__=1", "-D_Fn(x)=x", "-DNV_IF_TARGET"},
		CompilerMacros: []string{"NV_*"}}
	decided := func(in Input) []string {
		t.Helper()
		_, trace := mustScan(t, NewScanner(nil), in)
		var names []string
		for _, d := range trace {
			if d.Rule == RuleOptionDecides {
				names = append(names, d.Path)
			}
		}
		return names
	}
	if got := decided(in); !slices.Equal(got, []string{"__CUDA_ARCH__", "__CUDACC__", "_Fn", "NV_IF_TARGET"}) {
		t.Errorf("listed %q, want [__CUDA_ARCH__ __CUDACC__ _Fn NV_IF_TARGET]", got)
	}
	in.VerifiesPredefines = false
	if got := decided(in); len(got) != 0 {
		t.Errorf("without verification: listed %q", got)
	}
	in.VerifiesPredefines, in.PredefinesAfterOptions = true, true
	if got := decided(in); len(got) != 0 {
		t.Errorf("with the compiler's definitions after the options: listed %q", got)
	}
}

// TestPriorValueOfClangExtensionMacro: clang predefines the macro of each
// OpenCL extension its target supports, and one of them is not named
// cl_: cles_khr_int64 (1 from OpenCL C 1.1 on), so that
// #include XS(cles_khr_int64.h) opens 1.h on a driver built on clang (as
// Mesa's are) where a scan that took the name for undefined keyed
// cles_khr_int64.h. (PoCL 3.1 gives clang -cl-ext=-all,+its own list,
// which leaves it undefined: there the source is refused for nothing.)
func TestPriorValueOfClangExtensionMacro(t *testing.T) {
	root := tree(t, map[string]string{"1.h": "", "cles_khr_int64.h": ""})
	src := strMacros + "#include XS(cles_khr_int64.h)\n"
	// clang's driver lists its opencl-c-base.h too.
	if got := clangReads(t, root, src, "-x", "cl", "-cl-std=CL1.2"); !slices.Contains(got, "1.h") || slices.Contains(got, "cles_khr_int64.h") {
		t.Fatalf("clang reads %q, want 1.h: the case shows nothing", got)
	}
	in := Input{Source: []byte(src), WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
	_, _, err := NewScanner(nil).Scan(context.Background(), in)
	if errors.Is(err, ErrUncacheable) {
		return
	}
	if keyed := keyedNames(t, in); !slices.Contains(keyed, "1.h") {
		t.Errorf("clang reads 1.h, the key holds %q (err %v)", keyed, err)
	}
}
