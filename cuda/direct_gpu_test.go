package cuda

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// deleteEntry deletes the entry of src's key from the disk tier under
// dir, leaving its records: only a direct record can then serve it.
func deleteEntry(t *testing.T, c *Cache, dir string, src Source) {
	t.Helper()
	key, err := c.Key(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := kcache.LoadConfig(func(cf *kcache.Config) { cf.Dir = dir; cf.Persistent = true })
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	if err := st.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
}

// factorStep returns a check that a cache serves src with FACTOR want,
// from outcome.
func factorStep(t *testing.T, ctx *Context, src Source) func(c *Cache, what string, want int, outcome kcache.Outcome) {
	return func(c *Cache, what string, want int, outcome kcache.Outcome) {
		t.Helper()
		if got, o := factorOf(t, ctx, c, src); got != want || o != outcome {
			t.Fatalf("%s: FACTOR %d from %v, want %d from %v", what, got, o, want, outcome)
		}
	}
}

// TestDirectRecord: each new Cache over one disk tier stands for a new
// process. The first builds, stores, and writes the source's direct
// record: with the entry itself deleted, the second is served from the
// direct record alone (from disk, the header's value). The third is too,
// counted as a disk hit, and its next request of the source, which
// prepares the key the record named, gets the same live module. After an
// edit that keeps the header's size and modification time, the record is
// not used: the next process builds the new value.
func TestDirectRecord(t *testing.T) {
	ctx := requireGPU(t)
	dir, header, src := factorTree(t, 3)
	cacheDir := filepath.Join(dir, "cache")
	process := func() *Cache { return newTestCache(t, ctx, cacheDir) }
	step := factorStep(t, ctx, src)
	first := process()
	step(first, "first process", 3, kcache.OutcomeBuilt)
	deleteEntry(t, first, cacheDir, src)
	step(process(), "second process, the entry deleted after the build", 3, kcache.OutcomeDisk)

	third := process()
	step(third, "third process", 3, kcache.OutcomeDisk)
	if hits := third.bins.Stats().Disk.Hits; hits != 1 {
		t.Errorf("the direct record's hit counted %d disk hits, want 1", hits)
	}
	step(third, "third process, again", 3, kcache.OutcomeMemory)
	e := third.keys.lookup(src).e
	if e == nil || e.prep == nil || e.prep.Digests().Key != e.digest {
		t.Errorf("the key the direct record named was not prepared to the same digest: %+v", e)
	}

	setFactor(t, header, 5)
	step(process(), "after the edit", 5, kcache.OutcomeBuilt)
	deleteEntry(t, process(), cacheDir, src)
	step(process(), "after the edit, its direct record", 5, kcache.OutcomeDisk)
}

// TestDirectRecordRefused: a direct record whose binary the driver
// refuses is deleted, the request goes the usual way (the entry, from
// disk), and that way writes a record with the entry's binary.
func TestDirectRecordRefused(t *testing.T) {
	ctx := requireGPU(t)
	dir, _, src := factorTree(t, 4)
	cacheDir := filepath.Join(dir, "cache")
	if got, _ := factorOf(t, ctx, newTestCache(t, ctx, cacheDir), src); got != 4 {
		t.Fatalf("FACTOR %d, want 4", got)
	}
	c := newTestCache(t, ctx, cacheDir)
	if got, o := factorOf(t, ctx, c, src); got != 4 || o != kcache.OutcomeDisk {
		t.Fatalf("FACTOR %d from %v, want 4 from disk", got, o)
	}
	p, err := c.plan(src)
	if err != nil {
		t.Fatal(err)
	}
	req, err := c.directRequestOf(src, p)
	if err != nil {
		t.Fatal(err)
	}
	data, err := c.bins.LoadRecord(context.Background(), req.id)
	if err != nil {
		t.Fatalf("no direct record after a disk hit: %v", err)
	}
	d, err := decodeDirect(data)
	if err != nil {
		t.Fatal(err)
	}
	good := d.image
	d.image = (&image{format: FormatCUBIN, code: []byte("\x7fELF not a cubin")}).encode()
	if err := c.bins.StoreRecord(context.Background(), req.id, d.encode()); err != nil {
		t.Fatal(err)
	}
	fresh := newTestCache(t, ctx, cacheDir)
	if got, o := factorOf(t, ctx, fresh, src); got != 4 || o != kcache.OutcomeDisk {
		t.Fatalf("over a refused direct record: FACTOR %d from %v, want 4 from disk", got, o)
	}
	data, err = fresh.bins.LoadRecord(context.Background(), req.id)
	if err != nil {
		t.Fatalf("the direct record was not written again: %v", err)
	}
	if d, err := decodeDirect(data); err != nil || string(d.image) != string(good) {
		t.Errorf("the direct record written again holds another binary (err %v)", err)
	}
}

// TestDirectRecordLarge: a source whose records list more places than are
// stat'd before the load (a CUB kernel's hundreds) is served from its
// direct record alone, the stats running while the module loads; after an
// edit that keeps the header's size and modification time, the record's
// module, loaded before the stats answered, is never handed back: the new
// process builds the new value, and the record written then serves the
// next.
func TestDirectRecordLarge(t *testing.T) {
	ctx := requireGPU(t)
	dir, header, src := factorTree(t, 3)
	var code strings.Builder
	for i := range 24 {
		name := fmt.Sprintf("pad%02d.h", i)
		writeFile(t, filepath.Join(dir, "inc", name), fmt.Sprintf("#define PAD%d %d\n", i, i))
		code.WriteString("#include \"" + name + "\"\n")
	}
	time.Sleep(100 * time.Millisecond) // settled: past deps' window for fine timestamps
	src.Code = []byte(code.String() + factorSource)
	cacheDir := filepath.Join(dir, "cache")
	process := func() *Cache { return newTestCache(t, ctx, cacheDir) }
	step := factorStep(t, ctx, src)
	first := process()
	step(first, "first process", 3, kcache.OutcomeBuilt)
	deleteEntry(t, first, cacheDir, src)
	second := process()
	step(second, "second process, the entry deleted after the build", 3, kcache.OutcomeDisk)
	if hits := second.bins.Stats().Disk.Hits; hits != 1 {
		t.Errorf("the direct record's hit counted %d disk hits, want 1", hits)
	}
	step(second, "second process, again", 3, kcache.OutcomeMemory)

	setFactor(t, header, 5)
	step(process(), "after the edit", 5, kcache.OutcomeBuilt)
	deleteEntry(t, process(), cacheDir, src)
	step(process(), "after the edit, its direct record", 5, kcache.OutcomeDisk)
}
