package deps_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/keyparts"
)

// poclMain is where the tests that compare the scan with clang put the
// program text: PoCL compiles it from a temporary file of its own
// directory, which its compiler searches first for quoted includes.
func poclMain(wd string) string { return filepath.Join(wd, "pocl", "tempfile.cl") }

// clangAsPoCL writes src as PoCL's temporary file under wd and returns
// what clang-15 -E makes of it, run as PoCL 3.1 runs it on program text
// (deps.PoCLFrontEnd): the working directory searched first; options are
// the build's, joined by blanks into its options string, as keyAsPoCL
// joins them.
func clangAsPoCL(t *testing.T, clang, wd, src string, options ...string) ([]byte, error) {
	t.Helper()
	main := poclMain(wd)
	if err := os.MkdirAll(filepath.Dir(main), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args, err := deps.PoCLFrontEnd(strings.Join(options, " "))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(clang, append(args, "-E", "-Wno-everything", main)...)
	cmd.Dir = wd
	return cmd.Output()
}

// scanAsPoCL returns the scan's trace of src built on PoCL in wd, its
// temporary file as clangAsPoCL writes it; uncacheable says the scan
// refused the source.
func scanAsPoCL(t *testing.T, wd, src string, options ...string) (trace []deps.Dependency, uncacheable bool) {
	t.Helper()
	_, trace, uncacheable = keyAsPoCL(t, wd, src, options...)
	return trace, uncacheable
}

// keyAsPoCL is scanAsPoCL with the key's headers.
func keyAsPoCL(t *testing.T, wd, src string, options ...string) (headers []kcache.Header, trace []deps.Dependency, uncacheable bool) {
	t.Helper()
	in, err := keyparts.OpenCLScan([]byte(src), strings.Join(options, " "), keyparts.PoCL)
	if err != nil {
		t.Fatal(err)
	}
	in.WorkDir, in.MainDir = wd, filepath.Dir(poclMain(wd))
	headers, trace, err = deps.NewScanner(nil).Scan(context.Background(), in)
	if errors.Is(err, deps.ErrUncacheable) {
		return nil, nil, true
	} else if err != nil {
		t.Fatal(err)
	}
	return headers, trace, false
}

// keyHoldsWhatClangReads writes files (name to text, under a new working
// directory), each ending in a marker of its own, builds src there as
// clangAsPoCL and scanAsPoCL do, and reports each file whose marker clang's
// output holds and the key does not. It returns how many files clang read,
// and whether the scan refused the source, when nothing is checked.
func keyHoldsWhatClangReads(t *testing.T, clang string, files map[string]string, src string, options ...string) (read int, uncacheable bool) {
	t.Helper()
	wd := t.TempDir()
	marker := map[string]string{}
	for name, text := range files {
		marker[name] = fmt.Sprintf("int marker_%d;", len(marker))
		path := filepath.Join(wd, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text+marker[name]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := clangAsPoCL(t, clang, wd, src, options...)
	if err != nil {
		t.Fatalf("clang -E: %v", err)
	}
	trace, uncacheable := scanAsPoCL(t, wd, src, options...)
	if uncacheable {
		return 0, true
	}
	for name := range files {
		if !strings.Contains(string(out), marker[name]) {
			continue
		}
		read++
		if !slices.ContainsFunc(trace, func(d deps.Dependency) bool { return d.Rule != deps.RuleAbsent && d.Name == name }) {
			t.Errorf("clang reads %s; the key holds %v", name, trace)
		}
	}
	return read, false
}

// BenchmarkFirstScanPoCL is a process's first scan of an OpenCL source
// as the layer's first build in each application process makes it: the
// input keyparts.OpenCLScan gives for PoCL, and a new Scanner each time,
// so PoCL's built-in headers (2 MB) are read and searched for their
// includes anew. It skips where PoCL's headers are not installed.
func BenchmarkFirstScanPoCL(b *testing.B) {
	src := []byte("#include \"common.h\"\nkernel void k(global float *x) { x[0] = N; }\n")
	in, err := keyparts.OpenCLScan(src, "", keyparts.PoCL)
	if err != nil {
		b.Fatal(err)
	}
	if len(in.Builtins) == 0 {
		b.Skip("no PoCL headers installed")
	}
	wd := b.TempDir()
	if err := os.WriteFile(filepath.Join(wd, "common.h"), []byte("#ifndef COMMON_H\n#define COMMON_H\n#define N 4\n#endif\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	in.WorkDir, in.MainDir = wd, filepath.Dir(poclMain(wd))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := deps.NewScanner(nil).Scan(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}
