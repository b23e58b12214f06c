package deps

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	rec, _, ok := a.RecordOf(id)
	if !ok {
		t.Fatal("no small record of a settled one-header scan")
	}
	b := settledScanner(nil)
	n := counting(b)
	got, confirm, ok := b.AdoptRecord(context.Background(), []kcache.Header{{Name: "before"}}, id, rec)
	if !ok || !slices.Equal(got[1:], want) || got[0].Name != "before" || !confirm() {
		t.Fatalf("adopted %v, %v; want %v after the caller's, confirmed", got, ok, want)
	}
	if n.reads.Load() != 0 || n.stats.Load() == 0 {
		t.Errorf("%d reads, %d stats: want the record checked by stat, no header read", n.reads.Load(), n.stats.Load())
	}
	if again, _ := mustScan(t, b, in); !slices.Equal(again, want) || n.reads.Load() != 0 {
		t.Errorf("after the adoption the scan read %d files for %v", n.reads.Load(), again)
	}
	// The adopting scanner has its own memo now, of the same headers: a
	// second adoption stands on it.
	if got, _, ok := b.AdoptRecord(context.Background(), nil, id, rec); !ok || !slices.Equal(got, want) {
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
	rec, _, ok := a.RecordOf(id)
	if !ok {
		t.Fatal("no small record")
	}
	header := filepath.Join(root, "inc/a.h")
	write(t, header, "#define A 2\n") // the same size; an hour-old mtime
	b := settledScanner(nil)
	if got, _, ok := b.AdoptRecord(context.Background(), nil, id, rec); ok {
		t.Fatalf("a stale record was adopted: %v", got)
	}
	if now, _ := mustScan(t, b, in); slices.Equal(now, old) {
		t.Error("the scan after a refused record kept the old header")
	}
	// A scanner whose own memo is of the new header refuses the old record
	// too: its memo holds and names other headers.
	if _, _, ok := b.AdoptRecord(context.Background(), nil, id, rec); ok {
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
	rec, _, ok := a.RecordOf(id)
	if !ok {
		t.Fatal("no small record")
	}
	for i := range rec {
		bad := slices.Clone(rec)
		bad[i] ^= 0x20
		if _, _, ok := settledScanner(nil).AdoptRecord(context.Background(), nil, id, bad); ok {
			t.Fatalf("a record with byte %d damaged was adopted", i)
		}
	}
	for _, n := range []int{0, 3, len(rec) / 2, len(rec) - 1} {
		if _, _, ok := settledScanner(nil).AdoptRecord(context.Background(), nil, id, rec[:n]); ok {
			t.Fatalf("a record cut to %d bytes was adopted", n)
		}
	}
}

// TestRecordOfRefuses: RecordOf gives no record of a scan this process
// has not made, of one that expands __DATE__, of one that saw a file
// within the settling window, or of an input with a private directory.
func TestRecordOfRefuses(t *testing.T) {
	_, in := smallTree(t)
	if _, _, ok := settledScanner(nil).RecordOf(identified(t, in)); ok {
		t.Error("a record of an input never scanned")
	}
	dated := in
	dated.Source = []byte("#include \"a.h\"\nconst char *d = __DATE__;\n")
	s := settledScanner(nil)
	mustScan(t, s, dated)
	if _, _, ok := s.RecordOf(identified(t, dated)); ok {
		t.Error("a record of a source that expands __DATE__")
	}
	fresh := NewScanner(nil) // the files were just written: not settled
	mustScan(t, fresh, in)
	if _, _, ok := fresh.RecordOf(identified(t, in)); ok {
		t.Error("a record of a scan that saw a file within its settling window")
	}
	private := in
	private.PrivateDir = t.TempDir()
	private.MainDir = private.PrivateDir
	s = settledScanner(nil)
	mustScan(t, s, private)
	if _, _, ok := s.RecordOf(identified(t, private)); ok {
		t.Error("a record of an input with a private directory")
	}
}

// largeTree is a source that includes more headers than a record of
// earlyInlinePlaces places holds.
func largeTree(t testing.TB) (string, Input) {
	files := map[string]string{}
	var src strings.Builder
	for i := range earlyInlinePlaces + 4 {
		name := fmt.Sprintf("h%d.h", i)
		files["inc/"+name] = fmt.Sprintf("#define H%d 1\n", i)
		src.WriteString("#include \"" + name + "\"\n")
	}
	root := tree(t, files)
	return root, Input{Source: []byte(src.String()), WorkDir: root, Args: SplitOptions("-I inc")}
}

// TestAdoptLargeRecord: a record of more places than are checked inline
// is adopted with its stats still to answer: confirm says whether it
// held, and only then is it the scanner's memo. Stale (a header edited,
// the same size), confirm says false, nothing is remembered, and the
// next scan reads the new header.
func TestAdoptLargeRecord(t *testing.T) {
	root, in := largeTree(t)
	a := settledScanner(nil)
	want, _ := mustScan(t, a, in)
	id := identified(t, in)
	rec, headers, ok := a.RecordOf(id)
	if !ok || !slices.Equal(headers, want) {
		t.Fatalf("RecordOf of a settled scan of %d headers: %v, %v", len(want), headers, ok)
	}
	b := settledScanner(nil)
	n := counting(b)
	got, confirm, ok := b.AdoptRecord(context.Background(), nil, id, rec)
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("adopted %v, %v; want %v", got, ok, want)
	}
	if !confirm() || !confirm() {
		t.Fatal("a record that holds was not confirmed")
	}
	if again, _ := mustScan(t, b, in); !slices.Equal(again, want) || n.reads.Load() != 0 {
		t.Errorf("after a confirmed adoption the scan read %d files for %v", n.reads.Load(), again)
	}

	write(t, filepath.Join(root, "inc/h3.h"), "#define H3 2\n") // the same size, an hour-old mtime
	c := settledScanner(nil)
	n = counting(c)
	got, confirm, ok = c.AdoptRecord(context.Background(), nil, id, rec)
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("a large record is decoded before its stats answer: %v, %v", got, ok)
	}
	if confirm() {
		t.Fatal("a stale large record was confirmed")
	}
	if now, _ := mustScan(t, c, in); slices.Equal(now, want) || n.reads.Load() == 0 {
		t.Errorf("after a stale record the scan read %d files and kept the old headers: %v", n.reads.Load(), slices.Equal(now, want))
	}
}

// TestAdoptLargeRecordRemoved: a large record whose header was removed
// is not confirmed, however its stats are spread over goroutines.
func TestAdoptLargeRecordRemoved(t *testing.T) {
	root, in := largeTree(t)
	a := settledScanner(nil)
	mustScan(t, a, in)
	id := identified(t, in)
	rec, _, ok := a.RecordOf(id)
	if !ok {
		t.Fatal("no record")
	}
	last := fmt.Sprintf("inc/h%d.h", earlyInlinePlaces+3)
	if err := os.Remove(filepath.Join(root, last)); err != nil {
		t.Fatal(err)
	}
	_, confirm, ok := settledScanner(nil).AdoptRecord(context.Background(), nil, id, rec)
	if !ok || confirm() {
		t.Errorf("a record of a removed header: ok %v, confirmed %v; want decoded and not confirmed", ok, confirm != nil && confirm())
	}
}

// TestAdoptLargeRecordConcurrent: requests of one new process adopt one
// large record at once (run with -race): each is confirmed, and the scans
// after them read nothing.
func TestAdoptLargeRecordConcurrent(t *testing.T) {
	_, in := largeTree(t)
	a := settledScanner(nil)
	want, _ := mustScan(t, a, in)
	id := identified(t, in)
	rec, _, ok := a.RecordOf(id)
	if !ok {
		t.Fatal("no record")
	}
	b := settledScanner(nil)
	n := counting(b)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			got, confirm, ok := b.AdoptRecord(context.Background(), nil, id, rec)
			if !ok || !slices.Equal(got, want) || !confirm() {
				t.Errorf("adopted %d headers, ok %v; want %d, confirmed", len(got), ok, len(want))
			}
		})
	}
	wg.Wait()
	if again, _ := mustScan(t, b, in); !slices.Equal(again, want) || n.reads.Load() != 0 {
		t.Errorf("after the adoptions the scan read %d files", n.reads.Load())
	}
}
