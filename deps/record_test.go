package deps

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// memRecords is a RecordStore over a map, shared by the Scanners that
// stand for processes in these tests. It verifies nothing, as a store
// need not: a record's own checksum must catch damage.
type memRecords struct {
	mu     sync.Mutex
	m      map[kcache.Digest][]byte // guarded by mu
	stores atomic.Int64
}

func newMemRecords() *memRecords { return &memRecords{m: map[kcache.Digest][]byte{}} }

func (r *memRecords) LoadRecord(_ context.Context, id kcache.Digest) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.m[id]
	if !ok {
		return nil, fmt.Errorf("no record: %w", kcache.ErrMiss)
	}
	return slices.Clone(rec), nil
}

func (r *memRecords) StoreRecord(_ context.Context, id kcache.Digest, rec []byte) error {
	r.stores.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[id] = slices.Clone(rec)
	return nil
}

// only returns the one record the store holds.
func (r *memRecords) only(t testing.TB) (kcache.Digest, []byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.m) != 1 {
		t.Fatalf("the store holds %d records, want 1", len(r.m))
	}
	for id, rec := range r.m {
		return id, rec
	}
	panic("unreachable")
}

// recordTree is a tree whose scan takes most rules a record must carry:
// includes found and absent, a computed include, __has_include, a
// declared file and a declared directory (a manifest), and __DATE__.
func recordTree(t testing.TB) (string, Input) {
	root := tree(t, map[string]string{
		"i2/a.h": "#include \"b.h\"\n#define NAME \"c.h\"\n#include NAME\n",
		"i2/b.h": "#if __has_include(<opt.h>)\n#endif\nconst char *d = __DATE__;\n",
		"i2/c.h": "#define C 1\n", "i2/opt.h": "",
		"dep.txt":      "data\n",
		"lib/x/one.cl": "one\n", "lib/two.cl": "two\n",
	})
	in := Input{
		Source: []byte("#include <a.h>\n#include \"i2/b.h\"\n"), WorkDir: root,
		Args: SplitOptions("-I i1 -I i2"), Depends: []string{"dep.txt", "lib", "missing.txt"}, Trigraphs: TrigraphsOn,
	}
	return root, in
}

// TestRecordRoundTrip: a record decodes to the memo it was written from.
func TestRecordRoundTrip(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	s := NewScanner(nil, WithRecords(store))
	counting(s)
	scanRecorded(t, s, in)
	id, rec := store.only(t)
	want := s.memos.get(id)
	got, err := decodeRecord(id, rec)
	if err != nil {
		t.Fatal(err)
	}
	if !sameMemo(got, want) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	rules := map[string]bool{}
	for _, d := range got.dependencies() {
		rules[d.Rule] = true
	}
	for _, r := range []string{RuleInclude, RuleComputedInclude, RuleHasInclude, RuleAbsent, RuleDeclared, RuleManifest} {
		if !rules[r] {
			t.Errorf("the record holds no %s dependency", r)
		}
	}
	if !got.date {
		t.Error("the record lost __DATE__")
	}
	// A rule of a later scanner travels as text.
	want.trace = append(slices.Clone(want.trace), Dependency{Path: "/p", Name: "p", Rule: "future rule", Digest: kcache.Digest{9}})
	want.headers = append(slices.Clone(want.headers), kcache.Header{Name: "p", Digest: kcache.Digest{9}})
	if got, err := decodeRecord(id, encodeRecord(id, want)); err != nil || !sameMemo(got, want) {
		t.Errorf("with a literal rule: %v\n%+v\nwant %+v", err, got, want)
	}
}

// sameMemo reports whether a and b hold the same observations, headers,
// trace and day, however each keeps its trace.
func sameMemo(a, b *memo) bool {
	return reflect.DeepEqual(a.seen, b.seen) && reflect.DeepEqual(a.headers, b.headers) &&
		reflect.DeepEqual(a.dependencies(), b.dependencies()) && a.date == b.date
}

// TestRecordDamageIsAMiss: every truncation and every flipped bit of a
// record, and a record of another input, fail to decode; a Scanner given
// one scans and returns the right key.
func TestRecordDamageIsAMiss(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	s := NewScanner(nil, WithRecords(store))
	counting(s)
	want, _ := scanRecorded(t, s, in)
	id, rec := store.only(t)
	var damaged [][]byte
	for n := range len(rec) {
		damaged = append(damaged, rec[:n])
	}
	for bit := range 8 * len(rec) {
		d := slices.Clone(rec)
		d[bit/8] ^= 1 << (bit % 8)
		damaged = append(damaged, d)
	}
	for i, d := range damaged {
		if _, err := decodeRecord(id, d); !errors.Is(err, errBadRecord) {
			t.Fatalf("damage %d decoded: %v", i, err)
		}
	}
	if _, err := decodeRecord(kcache.Digest{1}, rec); !errors.Is(err, errBadRecord) {
		t.Errorf("the record of another input decoded: %v", err)
	}
	for i, d := range damaged {
		if i%97 != 0 { // a sample: each costs a scan
			continue
		}
		store.StoreRecord(context.Background(), id, d)
		s := NewScanner(nil, WithRecords(store))
		n := counting(s)
		if got, _ := scanRecorded(t, s, in); !slices.Equal(got, want) || n.reads.Load() == 0 {
			t.Fatalf("damage %d: headers %v after %d reads, want %v from a scan", i, got, n.reads.Load(), want)
		}
	}
}

// TestRecordPathLengthChecked: a record whose length of paths differs
// from the paths it holds, under a checksum that matches (a bug of the
// writer, not damage), is refused: the decoder allocates by that length.
func TestRecordPathLengthChecked(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	s := NewScanner(nil, WithRecords(store))
	counting(s)
	scanRecorded(t, s, in)
	id, rec := store.only(t)
	// magic, version, id, flags, the count of observations, then the
	// length of their paths.
	at := len(recordMagic) + 1 + len(id) + 1
	_, n := binary.Uvarint(rec[at:])
	at += n
	length, n := binary.Uvarint(rec[at:])
	for _, claim := range []uint64{0, length - 1, length + 1, 1 << 40} {
		body := slices.Concat(rec[:at], binary.AppendUvarint(nil, claim), rec[at+n:len(rec)-crcSize])
		sealed := binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, recordCRC))
		if _, err := decodeRecord(id, sealed); !errors.Is(err, errBadRecord) {
			t.Errorf("paths of %d bytes claimed as %d: decoded, err %v", length, claim, err)
		}
	}
}

// TestRecordNewScannerReadsNothing: a new Scanner over the same records,
// as a new process has, returns the same key by stat alone.
func TestRecordNewScannerReadsNothing(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	first := NewScanner(nil, WithRecords(store))
	counting(first)
	want, wantTrace := scanRecorded(t, first, in)
	s := NewScanner(nil, WithRecords(store))
	n := counting(s)
	got, trace := scanRecorded(t, s, in)
	if !slices.Equal(got, want) || !slices.Equal(trace, wantTrace) {
		t.Errorf("headers %v\nwant %v", got, want)
	}
	if n.reads.Load() != 0 || n.lists.Load() != 0 || n.stats.Load() == 0 {
		t.Errorf("%d reads, %d listings, %d stats; want stats only", n.reads.Load(), n.lists.Load(), n.stats.Load())
	}
	if store.stores.Load() != 1 {
		t.Errorf("%d records stored, want 1 (a hit stores none)", store.stores.Load())
	}
	if !s.Unchanged(in) {
		t.Error("Unchanged is false after a scan served by a record")
	}
}

// TestRecordUnchangedAfterEdit: the post-build check of a scan served by
// a record sees an edit made after it.
func TestRecordUnchangedAfterEdit(t *testing.T) {
	root, in := recordTree(t)
	store := newMemRecords()
	scanRecorded(t, settledScanner(store), in)
	s := NewScanner(nil, WithRecords(store))
	n := counting(s)
	scanRecorded(t, s, in)
	if n.reads.Load() != 0 {
		t.Fatalf("not served by the record: %d reads", n.reads.Load())
	}
	write(t, filepath.Join(root, "i2/c.h"), "#define C 2\n")
	if s.Unchanged(in) {
		t.Error("Unchanged is true after a header of the record was edited")
	}
}

// settledScanner returns a Scanner over store (nil: none) to which the
// files the tests just wrote are settled.
func settledScanner(store RecordStore) *Scanner {
	var s *Scanner
	if store == nil {
		s = NewScanner(nil)
	} else {
		s = NewScanner(nil, WithRecords(store))
	}
	counting(s)
	return s
}

// TestRecordTooNew: a scan that saw a file within a timestamp tick of its
// last change writes no record, and a record that says so is not trusted.
func TestRecordTooNew(t *testing.T) {
	root, in := recordTree(t)
	path := filepath.Join(root, "i2/c.h")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Unix(0, fi.Sys().(*syscall.Stat_t).Ctim.Nano())
	store := newMemRecords()
	s := NewScanner(nil, WithRecords(store))
	s.fs.now = func() time.Time { return changed.Add(time.Millisecond) } // c.h is too new
	scanRecorded(t, s, in)
	if store.stores.Load() != 0 {
		t.Fatal("a scan that saw a file too new stored a record")
	}

	settled := NewScanner(nil, WithRecords(store))
	counting(settled)
	want, _ := scanRecorded(t, settled, in)
	id, _ := store.only(t)
	m := *settled.memos.get(id)
	m.seen = slices.Clone(m.seen)
	for i := range m.seen {
		m.seen[i].settled = m.seen[i].path != path
	}
	store.StoreRecord(context.Background(), id, encodeRecord(id, &m))
	fresh := NewScanner(nil, WithRecords(store))
	n := counting(fresh)
	if got, _ := scanRecorded(t, fresh, in); !slices.Equal(got, want) || n.reads.Load() == 0 {
		t.Errorf("a record with a file too new was trusted: %d reads", n.reads.Load())
	}
}

// TestRecordConcurrentScanners: Scanners of one store scan the same
// input at once; every one gets the exact key.
func TestRecordConcurrentScanners(t *testing.T) {
	_, in := recordTree(t)
	want, _ := scanRecorded(t, settledScanner(nil), in)
	store := newMemRecords()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				s := NewScanner(nil, WithRecords(store))
				counting(s)
				h, _, err := s.Scan(context.Background(), in)
				s.writes.Wait()
				if err != nil || !slices.Equal(h, want) {
					t.Errorf("headers %v, %v; want %v", h, err, want)
				}
			}
		}()
	}
	wg.Wait()
}

// TestRecordValidStopsAtFirstDifference: a large memo is checked in
// parallel, and a difference anywhere is found.
func TestRecordValidStopsAtFirstDifference(t *testing.T) {
	files := map[string]string{}
	var src []byte
	for i := range 500 {
		files[fmt.Sprintf("h%d.h", i)] = ""
		src = fmt.Appendf(src, "#include \"h%d.h\"\n", i)
	}
	root := tree(t, files)
	in := Input{Source: src, WorkDir: root, SearchWorkDir: true, Trigraphs: TrigraphsOn}
	s := NewScanner(nil)
	counting(s)
	scanRecorded(t, s, in)
	for _, i := range []int{0, 250, 499} {
		write(t, filepath.Join(root, fmt.Sprintf("h%d.h", i)), "x")
		if s.Unchanged(in) {
			t.Errorf("an edit of header %d of 500 went unseen", i)
		}
		scanRecorded(t, s, in)
		if !s.Unchanged(in) {
			t.Errorf("after a rescan, Unchanged is false")
		}
	}
}

// TestInputIDCoversEveryField: changing any field of Input changes its
// id; a field added to Input must be hashed by inputID (or the memo and
// the records would serve one input's key for another).
func TestInputIDCoversEveryField(t *testing.T) {
	base := Input{Source: []byte("s")}
	id := inputID(base, "/wd")
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		in := base
		f := reflect.ValueOf(&in).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("changed")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(f.Int() + 1)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(f.Uint() + 1)
		case reflect.Slice:
			f.Set(reflect.Append(reflect.MakeSlice(f.Type(), 0, 1), reflect.New(f.Type().Elem()).Elem()))
			if f.Type().Elem().Kind() == reflect.String {
				f.Index(0).SetString("changed")
			}
		default:
			t.Fatalf("Input.%s: a %s; teach this test (and inputID) about it", v.Type().Field(i).Name, f.Kind())
		}
		wd := "/wd" // Scan passes in.WorkDir, or the process's
		if in.WorkDir != "" {
			wd = in.WorkDir
		}
		if inputID(in, wd) == id {
			t.Errorf("Input.%s is not part of inputID", v.Type().Field(i).Name)
		}
	}
	if inputID(base, "/other") == id {
		t.Error("the working directory is not part of inputID")
	}
}

// scanRecorded is mustScan that also waits for the record the scan
// stores, if any.
func scanRecorded(t testing.TB, s *Scanner, in Input) ([]kcache.Header, []Dependency) {
	t.Helper()
	h, tr := mustScan(t, s, in)
	s.writes.Wait()
	return h, tr
}

// stalledRecords is a RecordStore whose writes block until released, as
// a disk write behind a long eviction pass does.
type stalledRecords struct {
	memRecords
	release chan struct{}
	writing atomic.Int64
}

func (r *stalledRecords) StoreRecord(ctx context.Context, id kcache.Digest, rec []byte) error {
	r.writing.Add(1)
	defer r.writing.Add(-1)
	<-r.release
	return r.memRecords.StoreRecord(ctx, id, rec)
}

// TestRecordStalledStoreDoesNotBlock: a store that does not answer holds
// no scan, and the writes left waiting on it are bounded.
func TestRecordStalledStoreDoesNotBlock(t *testing.T) {
	_, in := recordTree(t)
	store := &stalledRecords{memRecords: *newMemRecords(), release: make(chan struct{})}
	s := settledScanner(store)
	want, _ := mustScan(t, settledScanner(nil), in)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2 * maxRecordWrites {
			in := in
			in.Args = append(slices.Clone(in.Args), fmt.Sprintf("-DN=%d", i)) // another input each time
			if h, _, err := s.Scan(context.Background(), in); err != nil || len(h) != len(want) {
				t.Errorf("scan %d: %v, %d headers, want %d", i, err, len(h), len(want))
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a guard against a hang, not a timing
		t.Fatal("scans wait on a stalled record store")
	}
	if n := store.writing.Load(); n > maxRecordWrites {
		t.Errorf("%d record writes waiting, want at most %d", n, maxRecordWrites)
	}
	close(store.release)
	s.writes.Wait()
	if n := store.stores.Load(); n != maxRecordWrites {
		t.Errorf("%d records stored, want the %d that were waiting", n, maxRecordWrites)
	}
}
