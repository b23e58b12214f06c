package deps

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/kcache/kcache"
)

// TestPermute: permute gathers in place as a copy would, for every
// permutation of a few elements and for random larger ones.
func TestPermute(t *testing.T) {
	check := func(from []int32) {
		t.Helper()
		a := make([]kcache.Header, len(from))
		for i := range a {
			a[i] = kcache.Header{Name: string(rune('a' + i%26)), Digest: kcache.Digest{byte(i), byte(i >> 8)}}
		}
		want := make([]kcache.Header, len(a))
		for k, j := range from {
			want[k] = a[j]
		}
		permute(a, slices.Clone(from))
		if !slices.Equal(a, want) {
			t.Fatalf("permute by %v: %v, want %v", from, a, want)
		}
	}
	var all func(prefix []int32, rest []int32)
	all = func(prefix, rest []int32) {
		if len(rest) == 0 {
			check(prefix)
			return
		}
		for i := range rest {
			all(append(slices.Clone(prefix), rest[i]), slices.Delete(slices.Clone(rest), i, i+1))
		}
	}
	for n := range 6 {
		rest := make([]int32, n)
		for i := range rest {
			rest[i] = int32(i)
		}
		all(nil, rest)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		from := make([]int32, 1+r.IntN(3000))
		for i := range from {
			from[i] = int32(i)
		}
		r.Shuffle(len(from), func(i, j int) { from[i], from[j] = from[j], from[i] })
		check(from)
	}
}

// TestRecordAbsentWithDigestRefused: a record whose absent place carries
// a digest (no scan writes one: an absent place has no content) is
// refused, however its checksum matches.
func TestRecordAbsentWithDigestRefused(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	s := settledScanner(store)
	scanRecorded(t, s, in)
	id, rec := store.only(t)
	m, err := decodeRecord(id, rec)
	if err != nil {
		t.Fatal(err)
	}
	forged := &memo{seen: m.seen, headers: m.headers, trace: slices.Clone(m.dependencies()), date: m.date}
	i := slices.IndexFunc(forged.trace, func(d Dependency) bool { return d.Rule == RuleAbsent })
	if i < 0 {
		t.Fatal("the tree gives no absent place")
	}
	if _, err := decodeRecord(id, encodeRecord(id, forged)); err != nil {
		t.Fatalf("the record re-encoded: %v", err)
	}
	forged.trace[i].Digest = kcache.Digest{1}
	if _, err := decodeRecord(id, encodeRecord(id, forged)); !errors.Is(err, errBadRecord) {
		t.Fatalf("an absent place with a digest: err %v, want errBadRecord", err)
	}
}

// TestRecordTraceMadeOnce: goroutines that ask one Scanner for the trace
// of a memo loaded from a record, all at once, get the scan's trace (run
// with -race: the trace is made on the first request).
func TestRecordTraceMadeOnce(t *testing.T) {
	_, in := recordTree(t)
	store := newMemRecords()
	wantHeaders, wantTrace := scanRecorded(t, settledScanner(store), in)
	s := settledScanner(store)
	// The key alone first: the memo is the record's, its trace not made.
	if h, err := s.AppendHeaders(context.Background(), nil, in); err != nil || !slices.Equal(h, wantHeaders) {
		t.Fatalf("headers %v, %v; want %v", h, err, wantHeaders)
	}
	m := s.memos.get(inputID(in, in.WorkDir))
	if m == nil || m.lazy == nil {
		t.Fatal("the memo is not the record's")
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			h, tr, err := s.Scan(context.Background(), in)
			if err != nil || !slices.Equal(h, wantHeaders) || !slices.Equal(tr, wantTrace) {
				t.Errorf("scan: %v; headers %v, trace %v\nwant %v, %v", err, h, tr, wantHeaders, wantTrace)
			}
		})
	}
	wg.Wait()
}
