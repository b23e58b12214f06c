package keyparts_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/keyparts"
)

// TestPoCLOptionsBehindATab: PoCL checks its build options split at ' '
// only, and hands clang the options split at every blank, so a tab after
// a -D or -I token passes any option to clang: with -working-directory,
// PoCL 3.1 compiles wd2/inc/x.h (V 9) where the scan keyed inc/x.h (V 1),
// and with --include-directory=other (clang reads -include
// "-directory=other") it reads a file the scan never named. Such options
// make the program uncacheable.
func TestPoCLOptionsBehindATab(t *testing.T) {
	dev := pocl(t)
	wd := t.TempDir()
	t.Chdir(wd)
	for name, text := range map[string]string{
		"inc/x.h":          "#define V 1\n",
		"wd2/inc/x.h":      "#define V 9\n",
		"-directory=other": "#define W 5\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(wd, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wd, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const src = "#include \"inc/x.h\"\n#ifndef W\n#define W 0\n#endif\nkernel void k(global int *out) { out[0] = V; out[1] = W; out[2] = 0; }\n"
	for _, tc := range []struct {
		options string
		want    []int32
	}{
		{"-DA\t-working-directory=wd2", []int32{9, 0, 0}},
		{"-I.\t-working-directory\twd2", []int32{9, 0, 0}},
		{"-D A\n-working-directory=wd2", []int32{9, 0, 0}},
		{"-DA\t--include-directory=other", []int32{1, 5, 0}},
	} {
		if got := runPoCL(t, dev, src, tc.options); !slices.Equal(got, tc.want) {
			t.Fatalf("%q: PoCL's kernel gives %v, want %v: the case shows nothing", tc.options, got, tc.want)
		}
		if _, err := keyparts.OpenCLScan([]byte(src), tc.options, keyparts.PoCL); !errors.Is(err, deps.ErrUncacheable) {
			t.Errorf("%q: PoCL reads files the scan does not follow; OpenCLScan: %v, want deps.ErrUncacheable", tc.options, err)
		}
	}
	for _, options := range []string{"-DA=1 -D B -I inc -Iinc -cl-std=CL1.2 -cl-fast-relaxed-math -w -Werror -g", "-D\t-w"} {
		if _, err := keyparts.OpenCLScan([]byte(src), options, keyparts.PoCL); err != nil {
			t.Errorf("%q: %v", options, err)
		}
	}
}

// TestPoCLCPlusPlusStandardBehindATab: PoCL refuses -cl-std=CLC++ as a
// token of its own, but behind a tab it reaches clang, which then
// replaces no trigraphs: the "??/" that ends a line comment splices
// nothing, and PoCL 3.1 reads the include on the next line (V 7), which a
// scan that replaced trigraphs took for part of the comment and left out
// of the key. The scan must key the header or refuse the source.
func TestPoCLCPlusPlusStandardBehindATab(t *testing.T) {
	dev := pocl(t)
	wd := t.TempDir()
	t.Chdir(wd)
	if err := os.MkdirAll(filepath.Join(wd, "inc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "inc", "y.h"), []byte("#define V 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const src = "// not an include ??/\n#include \"inc/y.h\"\n#ifndef V\n#define V 0\n#endif\nkernel void k(global int *out) { out[0] = V; out[1] = 0; out[2] = 0; }\n"
	for _, tc := range []struct {
		options string
		v       int32
	}{
		{"", 0},
		{"-DA\t-cl-std=CLC++", 7},
		{"-I.\n-cl-std=clc++2021", 7},
	} {
		if got := runPoCL(t, dev, src, tc.options); got[0] != tc.v {
			t.Fatalf("%q: PoCL's kernel gives V %d, want %d: the case shows nothing", tc.options, got[0], tc.v)
		}
		in, err := keyparts.OpenCLScan([]byte(src), tc.options, keyparts.PoCL)
		if err != nil {
			t.Fatal(err)
		}
		in.WorkDir = wd
		_, trace, err := deps.NewScanner(nil).Scan(context.Background(), in)
		if errors.Is(err, deps.ErrUncacheable) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		keyed := slices.ContainsFunc(trace, func(d deps.Dependency) bool { return d.Name == "inc/y.h" && d.Rule != deps.RuleAbsent })
		if tc.v != 0 && !keyed {
			t.Errorf("%q: PoCL reads inc/y.h, which the key lacks: %v", tc.options, trace)
		}
	}
}
