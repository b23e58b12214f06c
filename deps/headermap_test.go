package deps_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/headermaptest"
)

// writeHeaderMap writes at path a header map mapping the include name
// key to the file target (headermaptest).
func writeHeaderMap(t *testing.T, path, key, target string) {
	t.Helper()
	if err := headermaptest.Write(path, key, target); err != nil {
		t.Fatal(err)
	}
}

// TestHeaderMapAsClang: clang reads a search directory that is a file as
// a header map (clang-15 -M below lists the file it maps x.h to), which
// the scan does not read; PoCL passes -I so (keyparts'
// TestPoCLHeaderMap). The key held x.h as absent from "map/x.h", so
// editing the mapped file served the old binary. A search directory that
// is a file makes the source uncacheable, and one that becomes a file
// after a scan (created where none was, or replacing a directory) changes
// what the scan's probes observed: the memo is not used.
func TestHeaderMapAsClang(t *testing.T) {
	clang := requireClang(t)
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "else"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(wd, "else", "y.h")
	if err := os.WriteFile(target, []byte("#define V 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const src = "#include <x.h>\nint v = V;\n"
	if err := os.WriteFile(filepath.Join(wd, "m.cl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	writeHeaderMap(t, filepath.Join(wd, "probe.hmap"), "x.h", target)
	cmd := exec.Command(clang, "-x", "cl", "-I", "probe.hmap", "-M", "m.cl")
	cmd.Dir = wd
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), target) {
		t.Fatalf("clang does not read probe.hmap as a header map (%v, %s): the case shows nothing", err, out)
	}
	scan := func(s *deps.Scanner, dir string) error {
		_, _, err := s.Scan(context.Background(), deps.Input{Source: []byte(src), Args: []string{"-I", dir}, WorkDir: wd, CompleteSearchPath: true})
		return err
	}
	if err := scan(deps.NewScanner(nil), "probe.hmap"); !errors.Is(err, deps.ErrUncacheable) {
		t.Errorf("-I names a header map: %v, want deps.ErrUncacheable", err)
	}
	for i, existed := range []bool{false, true} {
		t.Run(fmt.Sprintf("directory existed %v", existed), func(t *testing.T) {
			dir := fmt.Sprintf("d%d", i)
			if existed {
				if err := os.Mkdir(filepath.Join(wd, dir), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			s := deps.NewScanner(nil)
			if err := scan(s, dir); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(wd, dir))
			writeHeaderMap(t, filepath.Join(wd, dir), "x.h", target)
			if err := scan(s, dir); !errors.Is(err, deps.ErrUncacheable) {
				t.Errorf("-I %s became a header map after the scan: %v, want deps.ErrUncacheable", dir, err)
			}
		})
	}
}
