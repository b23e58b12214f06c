package deps

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kcache/kcache"
)

// TestRecordForgedIsTrusted documents why dependency records never come
// from outside the machine's own cache (kcache import refuses them, the
// remote tier never carries them): a record whose stats are those of the
// files as they are now and whose digests are of another text is trusted
// whole. A scan served by it reads no header, and keys the source by the
// text the header held when the record was first written: the key of the
// entry built from other inputs.
func TestRecordForgedIsTrusted(t *testing.T) {
	root := tree(t, map[string]string{"inc/a.h": "#define SCALE 1\n"})
	in := Input{Source: []byte("#include \"a.h\"\n"), WorkDir: root, Args: SplitOptions("-I inc")}
	store := newMemRecords()
	old, _ := scanRecorded(t, settledScanner(store), in)
	id, data := store.only(t)

	path := filepath.Join(root, "inc/a.h")
	write(t, path, "#define SCALE 7\n")
	fresh, _ := mustScan(t, settledScanner(nil), in)
	if slices.Equal(fresh, old) {
		t.Fatal("the edit changed no header digest")
	}
	// The forgery: the old record, its stats of a.h replaced by a.h's now.
	m, err := decodeRecord(id, data)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	forged := 0
	for i := range m.seen {
		if m.seen[i].path == path || filepath.Clean(m.seen[i].path) == path {
			m.seen[i].id, m.seen[i].settled = identityOf(fi), true
			forged++
		}
	}
	if forged == 0 {
		t.Fatalf("the record observed no %s: %+v", path, m.seen)
	}
	store.StoreRecord(t.Context(), id, encodeRecord(id, m))

	s := settledScanner(store)
	n := counting(s)
	got, _ := scanRecorded(t, s, in)
	if n.reads.Load() != 0 {
		t.Fatalf("the forged record was not used: %d reads", n.reads.Load())
	}
	if !slices.EqualFunc(got, old, func(a, b kcache.Header) bool { return a.Name == b.Name && a.Digest == b.Digest }) {
		t.Fatalf("a scan served by the forged record gave %v, want the old text's %v", got, old)
	}
}
