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

	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/keyparts"
)

// TestPopMacroAsClang: #pragma pop_macro (or _Pragma("pop_macro(...)"))
// gives a macro back the state it had at its push_macro, undefined
// included, after a definition the scan took as certain: #define H b then
// pop_macro("H") leaves XS(H.h) naming H.h. Every header clang-15 reads
// must be keyed, or the source refused.
func TestPopMacroAsClang(t *testing.T) {
	clang := requireClang(t)
	const xs = "#define S(x) #x\n#define XS(x) S(x)\n"
	for _, tc := range []struct{ name, src string }{
		{"pragma", xs + "#pragma push_macro(\"H\")\n#define H b\n#pragma pop_macro(\"H\")\n#include XS(H.h)\n"},
		{"_Pragma", xs + "_Pragma(\"push_macro(\\\"H\\\")\")\n#define H b\n_Pragma(\"pop_macro(\\\"H\\\")\")\n#include XS(H.h)\n"},
		{"after #undef", "#define H \"a.h\"\n#pragma push_macro(\"H\")\n#undef H\n#pragma pop_macro(\"H\")\n#include H\n"},
		{"in a header", xs + "#pragma push_macro(\"H\")\n#define H b\n#include \"pop.h\"\n#include XS(H.h)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			files := map[string]string{"a.h": "", "b.h": "", "H.h": "", "pop.h": "#pragma pop_macro(\"H\")\n"}
			for name, text := range files {
				if err := os.WriteFile(filepath.Join(wd, name), []byte(text+fmt.Sprintf("int marker_%c;\n", name[0])), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			src := tc.src + "kernel void k(void) {}\n"
			main := filepath.Join(wd, "pocl", "tempfile.cl")
			if err := os.MkdirAll(filepath.Dir(main), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(clang, "-x", "cl", "-cl-std=CL1.2", "-I.", "-E", "-Wno-everything", main)
			cmd.Dir = wd
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("clang -E: %v", err)
			}
			in, err := keyparts.OpenCLScan([]byte(src), "", keyparts.PoCL)
			if err != nil {
				t.Fatal(err)
			}
			in.WorkDir, in.MainDir = wd, filepath.Dir(main)
			_, trace, err := deps.NewScanner(nil).Scan(context.Background(), in)
			if errors.Is(err, deps.ErrUncacheable) {
				return
			} else if err != nil {
				t.Fatal(err)
			}
			for name := range files {
				if !strings.Contains(string(out), fmt.Sprintf("int marker_%c;", name[0])) {
					continue
				}
				if !slices.ContainsFunc(trace, func(d deps.Dependency) bool { return d.Rule != deps.RuleAbsent && d.Name == name }) {
					t.Errorf("clang reads %s; the key holds %v", name, trace)
				}
			}
		})
	}
}
