package keyparts_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache/deps"
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

// writeHeaderMap writes at path a header map (clang/lib/Lex/HeaderMap.cpp)
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
