package deps_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcache/kcache/deps"
)

// writeHeaderMap writes at path a header map, the format clang reads
// from a search directory that is a file (clang/lib/Lex/HeaderMap.cpp),
// mapping the include name key to the file target.
func writeHeaderMap(t *testing.T, path, key, target string) {
	t.Helper()
	strs := "\x00" + key + "\x00"
	prefix := len(strs)
	strs += target + "\x00"
	suffix := len(strs)
	strs += "\x00"
	const buckets = 2
	hash := 0
	for _, c := range strings.ToLower(key) {
		hash += int(c) * 13
	}
	b := binary.LittleEndian.AppendUint32(nil, 0x686d6170) // "hmap"
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 24+12*buckets) // strings' offset
	b = binary.LittleEndian.AppendUint32(b, 1)             // entries
	b = binary.LittleEndian.AppendUint32(b, buckets)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(target)))
	for i := range buckets {
		k, p, s := 0, 0, 0
		if i == hash&(buckets-1) {
			k, p, s = 1, prefix, suffix
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(k))
		b = binary.LittleEndian.AppendUint32(b, uint32(p))
		b = binary.LittleEndian.AppendUint32(b, uint32(s))
	}
	if err := os.WriteFile(path, append(b, strs...), 0o644); err != nil {
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
