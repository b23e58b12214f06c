package keyparts

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcache/kcache/deps"
)

// TestUnknownDriverUnfollowedOptions: a driver other than PoCL may hand
// its options to clang, which honours -ivfsoverlay (clang-15 below reads
// another file for inc/x.h than the one the scan keys), -Xclang, -Wp,,
// @file and the like (and -working-directory, which PoCL's clang honours:
// TestPoCLOptionsBehindATab); only the options the scan follows and those
// that name no file are let through.
func TestUnknownDriverUnfollowedOptions(t *testing.T) {
	clang := requireClang(t)
	dir := t.TempDir()
	for name, text := range map[string]string{"inc/x.h": "int orig;\n", "other/y.h": "int remapped;\n", "m.cl": "#include \"inc/x.h\"\n"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	overlay := fmt.Sprintf(`{"version": 0, "roots": [{"name": %q, "type": "directory", "contents": [{"name": "x.h", "type": "file", "external-contents": %q}]}]}`,
		filepath.Join(dir, "inc"), filepath.Join(dir, "other", "y.h"))
	if err := os.WriteFile(filepath.Join(dir, "o.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(clang, "-x", "cl", "-ivfsoverlay", "o.yaml", "-E", "m.cl")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "int remapped;") {
		t.Fatalf("clang does not follow the overlay (%v): the case shows nothing", err)
	}
	for _, opts := range []string{"-ivfsoverlay o.yaml", "-Xclang -ivfsoverlay -Xclang o.yaml", "-Wp,-Iother", "@opts.rsp", "--include-directory=other", "-iwithprefix other", "-nostdinc", "-working-directory=other", "-working-directory other", "-include-pch x.pch", "-isystem-after other", "-I- -Iinc"} {
		if _, err := OpenCLScan(nil, opts, "Clover"); !errors.Is(err, deps.ErrUncacheable) {
			t.Errorf("%q on a driver whose options are not known: %v, want deps.ErrUncacheable", opts, err)
		}
	}
	for _, opts := range []string{"-I inc -Iinc -D A=1 -DB -U C -isystem s -idirafter a -iquote q -include f.h", "-cl-fast-relaxed-math -cl-std=CL2.0 -w -Werror -O3 -g -x cl"} {
		if _, err := OpenCLScan(nil, opts, "Clover"); err != nil {
			t.Errorf("%q: %v", opts, err)
		}
	}
}

// TestUnknownDriverIncludePathVariables: clang searches the directories of
// CPATH and C_INCLUDE_PATH (clang-15 below finds x.h through each), which
// the scan does not follow: on a driver other than PoCL, which may be clang
// underneath, a program built with one set is uncacheable. PoCL's clang
// ignores them, so PoCL's scan is unaffected.
func TestUnknownDriverIncludePathVariables(t *testing.T) {
	clang := requireClang(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "env"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "env", "x.h"), []byte("int from_env;\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "m.cl"), []byte("#include <x.h>\n"), 0o644)
	for _, v := range []string{"CPATH", "C_INCLUDE_PATH"} {
		cmd := exec.Command(clang, "-x", "cl", "-E", "m.cl")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), v+"="+filepath.Join(dir, "env"))
		if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "int from_env;") {
			t.Fatalf("clang does not search %s's directory (%v): the case shows nothing", v, err)
		}
	}
	for _, v := range includePathVariables {
		t.Run(v, func(t *testing.T) {
			t.Setenv(v, filepath.Join(dir, "env"))
			if _, err := OpenCLScan([]byte("#include <x.h>\n"), "", "Clover"); !errors.Is(err, deps.ErrUncacheable) {
				t.Errorf("%s set, a driver whose compiler is not known: %v, want deps.ErrUncacheable", v, err)
			}
			if _, err := OpenCLScan([]byte("#include <x.h>\n"), "", PoCL); err != nil {
				t.Errorf("%s set, PoCL: %v", v, err)
			}
		})
	}
	for _, v := range includePathVariables {
		t.Setenv(v, "")
	}
	if _, err := OpenCLScan([]byte("#include <x.h>\n"), "", "Clover"); err != nil {
		t.Errorf("none set: %v", err)
	}
}

// requireClang returns clang-15's path: PoCL 3.1's LLVM, whose
// preprocessor the scan is checked against. Without it the test skips,
// or fails under KCACHE_REQUIRE_REAL=1.
func requireClang(t *testing.T) string {
	t.Helper()
	clang, err := exec.LookPath("clang-15")
	if err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatal("KCACHE_REQUIRE_REAL=1 but clang-15 is missing")
		}
		t.Skip("no clang-15")
	}
	return clang
}
