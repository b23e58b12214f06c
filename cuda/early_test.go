package cuda

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/disk"
)

// recordsCache returns a Cache with no context, only what a key needs
// without a device: a scanner that keeps dependency records in a disk
// tier over dir, as a process's NewCache makes it.
func recordsCache(t *testing.T, dir string) *Cache {
	t.Helper()
	st, err := disk.Open(disk.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	bins := kcache.New(kcache.Config{}, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	return &Cache{bins: bins, scanner: deps.NewScanner(nil, deps.WithRecords(bins)), keys: newKeyMemo()}
}

// TestScannedEarlyEveryInput: a source with a header in memory has two
// scan inputs, each with its own record; a new process's early headers
// are both records' while every file of both holds, and an edit of a file
// only the header in memory includes is seen: the early headers are then
// the files' own.
func TestScannedEarlyEveryInput(t *testing.T) {
	user, cache := t.TempDir(), t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(user, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.h", "#define A 1\n")
	write("b.h", "#define B 1\n")
	settle := func() { time.Sleep(2100 * time.Millisecond) } // past the too-new window of a file's ctime
	settle()
	src := Source{Code: []byte("#include \"a.h\"\n"), Options: []string{"-I" + user},
		Headers: []Header{{Name: "mem.h", Content: []byte("#include \"b.h\"\n")}}}
	p, err := recordsCache(t, cache).plan(src) // as Key and Module plan it
	if err != nil {
		t.Fatal(err)
	}
	want, err := recordsCache(t, cache).scanned(context.Background(), nil, src, p) // stores both records
	if err != nil || len(want) != 2 {
		t.Fatalf("scanned %v, %v; want a.h and b.h", want, err)
	}
	got, confirm, err := recordsCache(t, cache).scannedEarly(context.Background(), src, p, true)
	if err != nil || !slices.Equal(got, want) || !confirm() {
		t.Fatalf("early: %v, %v; want %v confirmed", got, err, want)
	}
	early := recordsCache(t, cache)
	prep, confirm, err := early.preparedKey(context.Background(), src, p, true, early.keys.lookup(src))
	if err != nil || !confirm() {
		t.Fatalf("early key: %v, confirmed %v", err, confirm != nil && confirm())
	}
	if key, err := early.Key(context.Background(), src); err != nil || prep.Digests().Key != key.Digest() {
		t.Fatalf("early key %s, Key %v (%v)", prep.Digests().Key, key, err)
	}
	write("b.h", "#define B 2\n") // only the header in memory includes it
	settle()
	c := recordsCache(t, cache)
	got, confirm, err = c.scannedEarly(context.Background(), src, p, true)
	if err != nil {
		t.Fatal(err)
	}
	// These records list a few places each, so each is checked before
	// its early headers return (deps.AppendHeadersEarly): b.h's is stale,
	// and its input is scanned again. A larger record's headers would be
	// its own, unconfirmed.
	fresh, err := recordsCache(t, t.TempDir()).scanned(context.Background(), nil, src, p)
	if err != nil || slices.Equal(fresh, want) {
		t.Fatalf("a scan after the edit: %v, %v; want b.h's new digest", fresh, err)
	}
	if !slices.Equal(got, fresh) || !confirm() {
		t.Fatalf("early after the edit: %v (confirmed %v); want the files' %v confirmed", got, confirm(), fresh)
	}
	now, err := c.scanned(context.Background(), nil, src, p)
	if err != nil || !slices.Equal(now, fresh) {
		t.Fatalf("after a stale record: %v, %v; want %v", now, err, fresh)
	}
}
