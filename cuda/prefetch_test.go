package cuda

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/objcache"
)

// directFixture is a disk tier holding, for each of n sources that
// include one header, an entry and the direct record a process that found
// it would write, in order (the last one written is the list's first).
type directFixture struct {
	bins   *kcache.Cache
	header string
	srcs   []Source
	ids    []kcache.Digest
}

func newDirectFixture(t *testing.T, n int) *directFixture {
	t.Helper()
	dir := t.TempDir()
	f := &directFixture{header: filepath.Join(dir, "inc", "common.cuh")}
	writeFile(t, f.header, "#define X 1\n")
	// A record stores only stats that were settled (deps.tooNew): let the
	// header's ctime age past the window, as BenchmarkFirstLookup does.
	time.Sleep(100 * time.Millisecond)
	cfg, _ := kcache.LoadConfig(func(cf *kcache.Config) { cf.Dir = filepath.Join(dir, "cache"); cf.Persistent = true })
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	f.bins = kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	for i := range n {
		src := Source{Code: []byte(fmt.Sprintf("#include \"common.cuh\"\n__global__ void k%d() {}\n", i)), Path: "k.cu",
			Options: []string{"-I", filepath.Dir(f.header)}}
		blob := (&image{format: FormatCUBIN, code: []byte(fmt.Sprintf("cubin %d", i))}).encode()
		id := storeWithDirect(t, f.cache(t), src, blob)
		f.srcs, f.ids = append(f.srcs, src), append(f.ids, id)
	}
	return f
}

// storeWithDirect stores blob as the entry of src's key in c's tiers, and
// the direct record a process that found it would write; it returns the
// record's name. src's inputs must have small records.
func storeWithDirect(t testing.TB, c *Cache, src Source, blob []byte) kcache.Digest {
	t.Helper()
	ctx := context.Background()
	p, err := c.plan(src)
	if err != nil {
		t.Fatal(err)
	}
	prep, err := c.prepared(ctx, src, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.bins.Put(ctx, prep.Key(), kcache.Entry{Binary: blob}); err != nil {
		t.Fatal(err)
	}
	req, err := c.directRequestOf(src, p)
	if err != nil {
		t.Fatal(err)
	}
	d := direct{key: prep.Digests().Key, image: blob}
	for _, in := range req.ins {
		rec, _, ok := c.scanner.RecordOf(in)
		if !ok {
			t.Fatal("no small record")
		}
		d.records = append(d.records, rec)
	}
	if err := c.writeDirect(ctx, req.id, d); err != nil {
		t.Fatal(err)
	}
	return req.id
}

// cache is a new process's Cache over the fixture's tier, reading nothing
// ahead yet.
func (f *directFixture) cache(t *testing.T) *Cache {
	c := fakeCache(t, nil)
	c.bins, c.scanner = f.bins, deps.NewScanner(nil, deps.WithRecords(f.bins))
	return c
}

// served reports whether src's direct record serves c now, and the image.
func served(t *testing.T, c *Cache, src Source) ([]byte, bool) {
	t.Helper()
	p, err := c.plan(src)
	if err != nil {
		t.Fatal(err)
	}
	_, d, _, confirm, ok := c.lookupDirect(context.Background(), src, p)
	return d.image, ok && confirm()
}

// TestPrefetchServesFromMemory: a new Cache reads ahead the direct records
// its identity's processes wrote, and a request takes its record from
// memory: with the records deleted from the disk tier after the read, the
// requests are still served, each its own image, and a Cache that read
// nothing ahead is not.
func TestPrefetchServesFromMemory(t *testing.T) {
	f := newDirectFixture(t, 3)
	c := f.cache(t)
	c.prefetch(context.Background(), DefaultPrefetchBytes)
	for _, id := range f.ids {
		if err := f.bins.DeleteRecord(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	for i, src := range f.srcs {
		im, ok := served(t, c, src)
		if !ok {
			t.Fatalf("source %d: its record, read ahead, did not serve", i)
		}
		if got, _ := decodeImage(im); string(got.code) != fmt.Sprintf("cubin %d", i) {
			t.Errorf("source %d served %q", i, got.code)
		}
	}
	if _, ok := served(t, f.cache(t), f.srcs[0]); ok {
		t.Error("a Cache that read nothing ahead was served a deleted record")
	}
}

// TestPrefetchStale: a record read ahead whose header was edited since is
// checked as one read on request: it does not serve.
func TestPrefetchStale(t *testing.T) {
	f := newDirectFixture(t, 1)
	c := f.cache(t)
	c.prefetch(context.Background(), DefaultPrefetchBytes)
	if _, ok := c.ahead.records[f.ids[0]]; !ok {
		t.Fatal("the record was not read ahead")
	}
	writeFile(t, f.header, "#define X 2\n")
	if _, ok := served(t, c, f.srcs[0]); ok {
		t.Error("a record read ahead served after its header was edited")
	}
}

// TestPrefetchBudget: a Cache reads ahead no more bytes than it is given,
// most recent records first.
func TestPrefetchBudget(t *testing.T) {
	f := newDirectFixture(t, 4)
	one, err := f.bins.LoadRecord(context.Background(), f.ids[3])
	if err != nil {
		t.Fatal(err)
	}
	c := f.cache(t)
	c.prefetch(context.Background(), 2*len(one)+len(one)/2)
	if n := len(c.ahead.records); n != 2 {
		t.Fatalf("%d records read ahead within two and a half records' bytes, want 2", n)
	}
	for _, i := range []int{3, 2} {
		if _, ok := c.ahead.records[f.ids[i]]; !ok {
			t.Errorf("record %d of 4, among the two written last, was not read ahead", i)
		}
	}
}

// TestRememberDirect: the list names the records most recently written
// first, each once, at most maxPrefetchNames of them.
func TestRememberDirect(t *testing.T) {
	f := newDirectFixture(t, 0)
	c := f.cache(t)
	ctx := context.Background()
	list := func() []kcache.Digest {
		t.Helper()
		data, err := f.bins.LoadRecord(ctx, c.prefetchListID())
		if err != nil {
			t.Fatal(err)
		}
		names, err := decodePrefetchList(data)
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	for _, id := range []kcache.Digest{{1}, {2}, {1}} {
		if err := c.rememberDirect(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := list(); !slices.Equal(got, []kcache.Digest{{1}, {2}}) {
		t.Errorf("list %x, want 1 then 2", got)
	}
	for i := range maxPrefetchNames + 10 {
		if err := c.rememberDirect(ctx, kcache.Digest{byte(i), byte(i >> 8), 9}); err != nil {
			t.Fatal(err)
		}
	}
	last := maxPrefetchNames + 9
	if got := list(); len(got) != maxPrefetchNames || got[0] != (kcache.Digest{byte(last), byte(last >> 8), 9}) {
		t.Errorf("list of %d, first %x: want %d, the last written first", len(got), got[0], maxPrefetchNames)
	}
}

// FuzzDecodePrefetchList: any bytes decode or fail without a panic, and
// what decodes encodes to the same list.
func FuzzDecodePrefetchList(f *testing.F) {
	f.Add(encodePrefetchList([]kcache.Digest{{1}, {2}}))
	f.Add(encodePrefetchList(nil))
	f.Add([]byte(prefetchMagic + "\x01\xff\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		names, err := decodePrefetchList(data)
		if err != nil {
			return
		}
		again, err := decodePrefetchList(encodePrefetchList(names))
		if err != nil || !slices.Equal(again, names) {
			t.Fatalf("decoded %x, then %x, %v", names, again, err)
		}
	})
}

// TestDirectConcurrent: the goroutines of a new process that ask for one
// source at once are each served by its direct record (read ahead or
// not): the first adopts its dependency record, the others stand on the
// memo that made, and every one gets the key the record names.
func TestDirectConcurrent(t *testing.T) {
	f := newDirectFixture(t, 2)
	for _, ahead := range []bool{false, true} {
		c := f.cache(t)
		if ahead {
			c.prefetch(context.Background(), DefaultPrefetchBytes)
		}
		var wg sync.WaitGroup
		keys := make(chan kcache.Digest, 16)
		for i := range 16 {
			wg.Go(func() {
				src := f.srcs[i%2]
				p, err := c.plan(src)
				if err != nil {
					t.Error(err)
					return
				}
				_, d, _, confirm, ok := c.lookupDirect(context.Background(), src, p)
				if !ok || !confirm() {
					t.Errorf("goroutine %d (ahead %v): not served", i, ahead)
					return
				}
				if want := mustKeyOf(t, f.cache(t), src); d.key != want {
					t.Errorf("goroutine %d: key %x, want %x", i, d.key, want)
				}
				keys <- d.key
			})
		}
		wg.Wait()
		close(keys)
		if n := len(keys); n != 16 {
			t.Fatalf("%d of 16 served", n)
		}
	}
}

// mustKeyOf is src's key digest in c, by the usual way.
func mustKeyOf(t *testing.T, c *Cache, src Source) kcache.Digest {
	k, err := c.Key(context.Background(), src)
	if err != nil {
		t.Error(err)
		return kcache.Digest{}
	}
	return k.Digest()
}

// TestStoreDirectRecordsOfItsKey: a direct record is written after the
// module is served, from the scanner's last scans of the source's inputs;
// another request of the process may have scanned an edited header in
// between. The record then held the new header's stats beside the image of
// the old one's key, and a new process served that image for the new
// text. Records that give another key than the image's are not written.
func TestStoreDirectRecordsOfItsKey(t *testing.T) {
	f := newDirectFixture(t, 0)
	c := f.cache(t)
	c.modules = objcache.New[kcache.Digest, *moduleEntry](objcache.Options[*moduleEntry]{})
	ctx := context.Background()
	src := Source{Code: []byte("#include \"common.cuh\"\n__global__ void k() {}\n"), Path: "k.cu", Options: []string{"-I", filepath.Dir(f.header)}}
	p, err := c.plan(src)
	if err != nil {
		t.Fatal(err)
	}
	served1 := func(blob []byte) *CachedModule {
		t.Helper()
		prep, err := c.prepared(ctx, src, p)
		if err != nil {
			t.Fatal(err)
		}
		d := prep.Digests().Key
		h, err := c.modules.GetOrLoad(ctx, d, func(context.Context) (*moduleEntry, int64, bool) {
			return &moduleEntry{blob: blob, digest: d, outcome: kcache.OutcomeDisk}, int64(len(blob)), true
		}, func(context.Context) (*moduleEntry, int64, error) { return nil, 0, errors.New("no build here") })
		if err != nil {
			t.Fatal(err)
		}
		return &CachedModule{h: h, Outcome: kcache.OutcomeDisk}
	}
	req, err := c.directRequestOf(src, p)
	if err != nil {
		t.Fatal(err)
	}
	old := (&image{format: FormatCUBIN, code: []byte("cubin of X 1")}).encode()
	m := served1(old)
	writeFile(t, f.header, "#define X 2\n")
	time.Sleep(100 * time.Millisecond) // settled: the new scan's record may be written
	if _, err := c.prepared(ctx, src, p); err != nil {
		t.Fatal(err)
	}
	c.storeDirect(ctx, req, src, p, m)
	if img, ok := served(t, f.cache(t), src); ok {
		t.Errorf("a new process is served %q, the image of the header's old text, for the new one", img)
	}
	// The record of a key that held is written as before.
	cur := (&image{format: FormatCUBIN, code: []byte("cubin of X 2")}).encode()
	c.storeDirect(ctx, req, src, p, served1(cur))
	if img, ok := served(t, f.cache(t), src); !ok || !slices.Equal(img, cur) {
		t.Errorf("the record of the current key: served %v, image %q", ok, img)
	}
}
