package deps

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kcache/kcache"
)

// appendEarly is AppendHeadersEarly that fails the test on an error.
func appendEarly(t testing.TB, s *Scanner, in Input) ([]kcache.Header, Confirm) {
	t.Helper()
	h, confirm, err := s.AppendHeadersEarly(context.Background(), nil, in)
	if err != nil {
		t.Fatal(err)
	}
	return h, confirm
}

// overlapping makes s check every record early on a goroutine of its own,
// however few places it lists: the tests' records are small, and these
// tests are of that path.
func overlapping(s *Scanner) *Scanner {
	s.earlyInline = 0
	return s
}

// TestEarlyRecordHolds: a new process's scanner gives a record's headers
// early, reading no header, and confirms them; once confirmed, the memo
// is its own, and a later call needs no record.
func TestEarlyRecordHolds(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	want, _ := scanRecorded(t, settledScanner(store), in)
	s := overlapping(settledScanner(store))
	n := counting(s)
	got, confirm := appendEarly(t, s, in)
	if !slices.Equal(got, want) {
		t.Errorf("early headers %v\nwant %v", got, want)
	}
	if !confirm() || !confirm() {
		t.Fatal("a record whose every stat holds was not confirmed")
	}
	if n.reads.Load() != 0 || n.lists.Load() != 0 {
		t.Errorf("%d reads, %d listings: the record was not used", n.reads.Load(), n.lists.Load())
	}
	stats := n.stats.Load()
	if again, confirm := appendEarly(t, s, in); !slices.Equal(again, want) || !confirm() {
		t.Errorf("second call: %v, want %v confirmed", again, want)
	}
	if n.stats.Load() == stats || n.reads.Load() != 0 {
		t.Errorf("second call: the memo was not checked by stat, or a header was read")
	}
	if !s.Unchanged(in) {
		t.Error("Unchanged is false after a confirmed early key")
	}
}

// TestEarlyRecordStale: a header of the record edited before a new
// process's first key: the early headers are the record's, confirm says
// they do not hold, nothing is remembered from them, and AppendHeaders
// then gives the key of the files as they are.
func TestEarlyRecordStale(t *testing.T) {
	root, in := recordTree(t)
	store := newMemRecords()
	old, _ := scanRecorded(t, settledScanner(store), in)
	write(t, filepath.Join(root, "i2/c.h"), "#define C 2\n")
	want, _ := scanRecorded(t, settledScanner(nil), in)
	if slices.Equal(old, want) {
		t.Fatal("the edit did not change the key")
	}
	s := overlapping(settledScanner(store))
	got, confirm := appendEarly(t, s, in)
	if !slices.Equal(got, old) {
		t.Errorf("early headers %v\nwant the record's %v", got, old)
	}
	if confirm() {
		t.Fatal("a record with an edited header was confirmed")
	}
	if s.Unchanged(in) {
		t.Error("a stale record was remembered as the memo")
	}
	now, err := s.AppendHeaders(context.Background(), nil, in)
	if err != nil || !slices.Equal(now, want) {
		t.Errorf("after a stale record: %v, %v; want %v", now, err, want)
	}
	if fresh, confirm := appendEarly(t, settledScanner(store), in); !slices.Equal(fresh, want) || !confirm() {
		t.Errorf("the rescan's record: %v, want %v confirmed", fresh, want)
	}
}

// TestEarlyRecordInline: a record of a few places is checked before
// AppendHeadersEarly returns: where it holds, its headers come confirmed
// with no header read; where a header was edited (its size kept), the
// headers are those of a scan of the files as they are, confirmed, and
// never the record's.
func TestEarlyRecordInline(t *testing.T) {
	root, in := recordTree(t)
	store := newMemRecords()
	old, _ := scanRecorded(t, settledScanner(store), in)
	s := settledScanner(store)
	if id, rec := store.only(t); len(mustDecode(t, id, rec).seen) > s.earlyInline {
		t.Fatalf("the record lists more than %d places: not a small record", s.earlyInline)
	}
	n := counting(s)
	got, confirm := appendEarly(t, s, in)
	if !slices.Equal(got, old) || !confirm() || n.reads.Load() != 0 || n.lists.Load() != 0 {
		t.Fatalf("a record that holds: %v (confirmed %v, %d reads, %d listings), want %v from the record",
			got, confirm(), n.reads.Load(), n.lists.Load(), old)
	}
	write(t, filepath.Join(root, "i2/c.h"), "#define C 2\n")
	want, _ := scanRecorded(t, settledScanner(nil), in)
	s = settledScanner(store)
	n = counting(s)
	got, confirm = appendEarly(t, s, in)
	if slices.Equal(got, old) || !slices.Equal(got, want) || !confirm() {
		t.Fatalf("a stale record: %v (confirmed %v)\nwant the files' %v confirmed", got, confirm(), want)
	}
	if n.reads.Load() == 0 {
		t.Error("a stale record: no header was read, so the record's headers were used")
	}
}

// mustDecode decodes a record of id.
func mustDecode(t *testing.T, id kcache.Digest, rec []byte) *memo {
	t.Helper()
	m, err := decodeRecord(id, rec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEarlyNoRecord: without a record, or without records at all, the
// headers are a scan's and hold on return.
func TestEarlyNoRecord(t *testing.T) {
	_, in := recordTree(t)
	want, _ := scanRecorded(t, settledScanner(nil), in)
	for _, store := range []RecordStore{nil, newMemRecords()} {
		s := settledScanner(store)
		got, confirm := appendEarly(t, s, in)
		if !slices.Equal(got, want) || !confirm() {
			t.Errorf("store %v: %v, want %v confirmed", store, got, want)
		}
	}
}

// TestEarlyConcurrent: goroutines of one new scanner ask for the same
// input's early headers at once, some confirming, some not: every
// confirmed answer is the key, and the memo ends up held.
func TestEarlyConcurrent(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	want, _ := scanRecorded(t, settledScanner(store), in)
	s := overlapping(settledScanner(store))
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, confirm := appendEarly(t, s, in)
			if i%4 == 3 {
				return // a caller that left before confirming
			}
			if !confirm() || !slices.Equal(got, want) {
				t.Errorf("headers %v, want %v confirmed", got, want)
			}
		}()
	}
	wg.Wait()
	if !s.Unchanged(in) {
		t.Error("no memo after confirmed early keys")
	}
}

// TestScanStart: the function of WithScanStart is called when an input is
// scanned afresh, and not when a dependency record or the memo gives its
// files.
func TestScanStart(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	var calls atomic.Int32
	ctx := WithScanStart(context.Background(), func() { calls.Add(1) })
	s := settledScanner(store)
	if _, _, err := s.AppendHeadersEarly(ctx, nil, in); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Fatalf("a scan without a record: called %d times, want 1", calls.Load())
	}
	if _, _, err := s.AppendHeadersEarly(ctx, nil, in); err != nil || calls.Load() != 1 {
		t.Errorf("the memo's answer: called %d times (%v), want still 1", calls.Load(), err)
	}
	_, confirm, err := settledScanner(store).AppendHeadersEarly(ctx, nil, in)
	if err != nil || !confirm() || calls.Load() != 1 {
		t.Errorf("a new process's record: called %d times (%v), want still 1", calls.Load(), err)
	}
}

// BenchmarkEarlySmallRecord is a new process's first early key of a
// source whose record lists a few places: checked on a goroutine of its
// own while the caller goes on (the path of larger records), or before
// AppendHeadersEarly returns. Each iteration is a new Scanner; the record
// comes from memory, so what differs is the goroutine and the wait.
func BenchmarkEarlySmallRecord(b *testing.B) {
	_, in := recordTree(b)
	store := newMemRecords()
	want, _ := scanRecorded(b, settledScanner(store), in)
	for _, bc := range []struct {
		name   string
		inline int
	}{{"goroutine", 0}, {"inline", earlyInlinePlaces}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				s := settledScanner(store)
				s.earlyInline = bc.inline
				b.StartTimer()
				got, confirm := appendEarly(b, s, in)
				if !confirm() || len(got) != len(want) {
					b.Fatalf("headers %v, want %v confirmed", got, want)
				}
			}
		})
	}
}
