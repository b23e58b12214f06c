package keyparts_test

import (
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
