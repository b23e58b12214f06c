package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kcache/kcache"
)

// onTerminal runs the CLI with args under script(1), so that its standard
// input, output and error are a real terminal, with the cache under dir.
// It returns what the terminal showed, and the exit status script reports.
func onTerminal(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("KCACHE_REQUIRE_REAL=1 but script(1) is missing: %v", err)
		}
		t.Skipf("script(1) unavailable: %v", err)
	}
	line := quote(os.Args[0])
	for _, a := range args {
		line += " " + quote(a)
	}
	cmd := exec.Command("script", "-qec", line, "/dev/null")
	cmd.Env = append(os.Environ(), "RUN_AS_KCACHE_CLI=1", "KCACHE_DIR="+filepath.Join(dir, "cache"),
		"POCL_KERNEL_CACHE=0", "POCL_CACHE_DIR="+t.TempDir(), "TERM=dumb")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(out), "\r\n", "\n"), code
}

// quote quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestBundleRefusesTerminal: export - with a terminal for standard output
// and import - with one for standard input refuse, as zstd does, and write
// nothing to the screen but the message.
func TestBundleRefusesTerminal(t *testing.T) {
	dir := t.TempDir()
	putFakes(t, testStore(t, dir), "Fake GPU", 3)
	for _, args := range [][]string{{"export", "-"}, {"import", "-"}} {
		out, code := onTerminal(t, dir, nil, args...)
		if code != 1 || !strings.HasPrefix(out, "kcache: refusing to ") || strings.Count(out, "\n") != 1 {
			t.Errorf("%v on a terminal: exit %d, output %q", args, code, out)
		}
	}
	// Piped, export - still writes the bundle.
	r := run(t, dir, "export", "-")
	if r.code != 0 || len(r.stdout) == 0 || !strings.HasPrefix(r.stderr, "exported 3 entries (") {
		t.Errorf("piped export: exit %d, %d bytes, stderr %q", r.code, len(r.stdout), r.stderr)
	}
}

// TestTablesFitTerminal lists entries with long device names and options
// on an 80-column terminal: no line of ls or stats is wider, and the cut
// cells say so with "…".
func TestTablesFitTerminal(t *testing.T) {
	dir := t.TempDir()
	st := testStore(t, dir)
	for i := range 3 {
		k := fakeKey("pthread-skylake-avx512-AMD EPYC 7B13 64-Core Processor", i)
		k.Options.Compile = "-I /home/someone/projects/kernels/include -DTILE=16 -cl-fast-relaxed-math -cl-mad-enable"
		k.Compiler.Version = "The pocl project OpenCL 3.0 PoCL 6.0+debian Linux, LLVM 17.0.6"
		if err := st.Put(context.Background(), k, kcache.Entry{Binary: []byte("binary")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"ls"}, {"stats"}} {
		out, code := onTerminal(t, dir, []string{"COLUMNS=80"}, args...)
		if code != 0 || !strings.Contains(out, "…") {
			t.Errorf("%v: exit %d, nothing cut:\n%s", args, code, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Errorf("%v: a line of %d columns: %q", args, n, line)
			}
		}
	}
}
