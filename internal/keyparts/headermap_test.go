package keyparts_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/internal/headermaptest"
	"github.com/kcache/kcache/internal/keyparts"
)

// TestPoCLHeaderMap: PoCL 3.1's clang reads an -I that names a file as a
// header map (V 42 below comes from the file it maps x.h to, which the
// scan never named: the key held x.h as absent, and editing the mapped
// file kept the key). Such a program is uncacheable; deps'
// TestHeaderMapAsClang covers a search directory that becomes a file.
func TestPoCLHeaderMap(t *testing.T) {
	dev := pocl(t)
	wd := t.TempDir()
	t.Chdir(wd)
	target := filepath.Join(wd, "else", "y.h")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("#define V 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeHeaderMap(t, filepath.Join(wd, "map.hmap"), "x.h", target)
	const src = "#include <x.h>\nkernel void k(global int *out) { out[0] = V; out[1] = 0; out[2] = 0; }\n"
	if got := runPoCL(t, dev, src, "-I map.hmap"); !slices.Equal(got, []int32{42, 0, 0}) {
		t.Fatalf("PoCL's kernel gives %v, want [42 0 0]: PoCL does not read header maps, the case shows nothing", got)
	}
	in, err := keyparts.OpenCLScan([]byte(src), "-I map.hmap", keyparts.PoCL)
	if err != nil {
		t.Fatal(err)
	}
	in.WorkDir = wd
	if _, _, err := deps.NewScanner(nil).Scan(context.Background(), in); !errors.Is(err, deps.ErrUncacheable) {
		t.Errorf("PoCL reads %s through the header map; the scan: %v, want deps.ErrUncacheable", target, err)
	}
}

// writeHeaderMap writes at path a header map mapping the include name
// key to the file target (headermaptest).
func writeHeaderMap(t *testing.T, path, key, target string) {
	t.Helper()
	if err := headermaptest.Write(path, key, target); err != nil {
		t.Fatal(err)
	}
}
