package deps

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache"
)

// smallTree is a source with one header found and one place probed
// empty: a record of a few places, as a small kernel's.
func smallTree(t testing.TB) (string, Input) {
	root := tree(t, map[string]string{"inc/a.h": "#define A 1\n"})
	return root, Input{Source: []byte("#include \"a.h\"\nint k;\n"), WorkDir: root, Args: SplitOptions("-I inc")}
}

// identified is Identify of one input, failing the test on an error.
func identified(t testing.TB, in Input) Identified {
	t.Helper()
	ids, err := Identify([]Input{in})
	if err != nil {
		t.Fatal(err)
	}
	return ids[0]
}

// idOf is the record id WriteID names.
func idOf(in Identified) kcache.Digest {
	h := sha256.New()
	in.WriteID(h)
	var d kcache.Digest
	h.Sum(d[:0])
	return d
}

// TestAdoptRecord: a small record that SmallRecord gave one process is
// adopted by another's scanner with no header read: the headers are the
// scan's, and the memo is the new scanner's own. WriteID names the
// record's id.
func TestAdoptRecord(t *testing.T) {
	_, in := smallTree(t)
	a := settledScanner(nil)
	want, _ := mustScan(t, a, in)
	id := identified(t, in)
	if idOf(id) != inputID(in, in.WorkDir) {
		t.Fatal("WriteID does not write what names the input's record")
	}
	rec, ok := a.SmallRecord(id)
	if !ok {
		t.Fatal("no small record of a settled one-header scan")
	}
	b := settledScanner(nil)
	n := counting(b)
	got, ok := b.AdoptRecord(context.Background(), []kcache.Header{{Name: "before"}}, id, rec)
	if !ok || !slices.Equal(got[1:], want) || got[0].Name != "before" {
		t.Fatalf("adopted %v, %v; want %v after the caller's", got, ok, want)
	}
	if n.reads.Load() != 0 || n.stats.Load() == 0 {
		t.Errorf("%d reads, %d stats: want the record checked by stat, no header read", n.reads.Load(), n.stats.Load())
	}
	if again, _ := mustScan(t, b, in); !slices.Equal(again, want) || n.reads.Load() != 0 {
		t.Errorf("after the adoption the scan read %d files for %v", n.reads.Load(), again)
	}
	// The adopting scanner has its own memo now, of the same headers: a
	// second adoption stands on it.
	if got, ok := b.AdoptRecord(context.Background(), nil, id, rec); !ok || !slices.Equal(got, want) {
		t.Errorf("second adoption over the scanner's own memo: %v, %v", got, ok)
	}
}

// TestAdoptRecordStale: a record whose header was edited since (the same
// size) is not adopted, and the
// scan then finds the new header.
func TestAdoptRecordStale(t *testing.T) {
	root, in := smallTree(t)
	a := settledScanner(nil)
	old, _ := mustScan(t, a, in)
	id := identified(t, in)
	rec, ok := a.SmallRecord(id)
	if !ok {
		t.Fatal("no small record")
	}
	header := filepath.Join(root, "inc/a.h")
	write(t, header, "#define A 2\n") // the same size; an hour-old mtime
	b := settledScanner(nil)
	if got, ok := b.AdoptRecord(context.Background(), nil, id, rec); ok {
		t.Fatalf("a stale record was adopted: %v", got)
	}
	if now, _ := mustScan(t, b, in); slices.Equal(now, old) {
		t.Error("the scan after a refused record kept the old header")
	}
	// A scanner whose own memo is of the new header refuses the old record
	// too: its memo holds and names other headers.
	if _, ok := b.AdoptRecord(context.Background(), nil, id, rec); ok {
		t.Error("a record of other headers was adopted over the scanner's own memo")
	}
}

// TestAdoptRecordDamaged: a record damaged anywhere, truncated, or of
// another version is never adopted.
func TestAdoptRecordDamaged(t *testing.T) {
	_, in := smallTree(t)
	a := settledScanner(nil)
	mustScan(t, a, in)
	id := identified(t, in)
	rec, ok := a.SmallRecord(id)
	if !ok {
		t.Fatal("no small record")
	}
	for i := range rec {
		bad := slices.Clone(rec)
		bad[i] ^= 0x20
		if _, ok := settledScanner(nil).AdoptRecord(context.Background(), nil, id, bad); ok {
			t.Fatalf("a record with byte %d damaged was adopted", i)
		}
	}
	for _, n := range []int{0, 3, len(rec) / 2, len(rec) - 1} {
		if _, ok := settledScanner(nil).AdoptRecord(context.Background(), nil, id, rec[:n]); ok {
			t.Fatalf("a record cut to %d bytes was adopted", n)
		}
	}
}

// TestSmallRecordRefuses: SmallRecord gives no record of a scan this
// process has not made, of one that expands __DATE__, of one that saw a
// file within the settling window, of one of more places than a caller
// checks inline, or of an input with a private directory.
func TestSmallRecordRefuses(t *testing.T) {
	_, in := smallTree(t)
	if _, ok := settledScanner(nil).SmallRecord(identified(t, in)); ok {
		t.Error("a record of an input never scanned")
	}
	dated := in
	dated.Source = []byte("#include \"a.h\"\nconst char *d = __DATE__;\n")
	s := settledScanner(nil)
	mustScan(t, s, dated)
	if _, ok := s.SmallRecord(identified(t, dated)); ok {
		t.Error("a record of a source that expands __DATE__")
	}
	fresh := NewScanner(nil) // the files were just written: not settled
	mustScan(t, fresh, in)
	if _, ok := fresh.SmallRecord(identified(t, in)); ok {
		t.Error("a record of a scan that saw a file within its settling window")
	}
	files := map[string]string{}
	var src strings.Builder
	for i := range earlyInlinePlaces + 1 {
		name := fmt.Sprintf("h%d.h", i)
		files["inc/"+name] = ""
		src.WriteString("#include \"" + name + "\"\n")
	}
	large := in
	large.WorkDir, large.Source = tree(t, files), []byte(src.String())
	s = settledScanner(nil)
	mustScan(t, s, large)
	if _, ok := s.SmallRecord(identified(t, large)); ok {
		t.Error("a record of more places than are checked inline")
	}
	private := in
	private.PrivateDir = t.TempDir()
	private.MainDir = private.PrivateDir
	s = settledScanner(nil)
	mustScan(t, s, private)
	if _, ok := s.SmallRecord(identified(t, private)); ok {
		t.Error("a record of an input with a private directory")
	}
}
