package disk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// fillAged puts entries 0..n-1 with binaries of size bytes, advancing the
// clock two hours between them so their access times are distinct and in
// insertion order.
func fillAged(t *testing.T, s *Store, clock *testClock, n, size int) {
	t.Helper()
	for i := range n {
		putSettled(t, s, i, size)
		clock.Advance(2 * time.Hour)
	}
}

// present lists the keys with sound entries, in order. It walks instead
// of calling Get, which would refresh the access times under test.
func present(t *testing.T, s *Store) []int {
	t.Helper()
	settle(t, s)
	var out []int
	err := s.Walk(context.Background(), func(in Info) error {
		if in.OK() {
			out = append(out, keyIndex(in.Key))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestEvictLeastRecentlyUsed(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now, EvictionDisabled: true})
	putSettled(t, s, 100, 1000)
	per := entrySize(t, s, 100) // every test entry has the same size
	s.Delete(context.Background(), testKey(100))

	tests := []struct {
		name    string
		evictTo float64
		touch   []int // entries used before the insert that overflows
		want    []int // entries left
	}{
		// Target 5.25 entries: five stay.
		{"half", 0.5, nil, []int{6, 7, 8, 9, 10}},
		// Target 9.45 entries: nine stay.
		{"most", 0.9, nil, []int{2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"used entries survive", 0.5, []int{0, 2}, []int{0, 2, 8, 9, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			// Room for exactly 10 entries: the 11th overflows.
			s := openTest(t, Options{Now: clock.Now, MaxSize: 10*per + per/2, EvictTo: tt.evictTo})
			fillAged(t, s, clock, 10, 1000)
			if got := present(t, s); len(got) != 10 {
				t.Fatalf("before overflow: %v", got)
			}
			for _, i := range tt.touch {
				checkGet(t, s, i, 1000) // an hour or more stale: refreshed
			}
			clock.Advance(2 * time.Hour)
			putSettled(t, s, 10, 1000)
			if got := present(t, s); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("left %v, want %v", got, tt.want)
			}
			_, total := walkSum(t, s)
			if size, _ := s.Size(context.Background()); size != total {
				t.Errorf("size file %d, walk %d", size, total)
			}
			if total > int64(tt.evictTo*float64(s.opts.MaxSize)) {
				t.Errorf("total %d above target", total)
			}
		})
	}
}

func TestEvictionDisabled(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now, MaxSize: 5000, AgeThreshold: time.Hour, EvictionDisabled: true})
	fillAged(t, s, clock, 20, 1000)
	clock.Advance(48 * time.Hour)
	putSettled(t, s, 20, 1000)
	if got := present(t, s); len(got) != 21 {
		t.Fatalf("entries evicted with eviction disabled: left %v", got)
	}
}

func TestNoSizeLimit(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now})
	fillAged(t, s, clock, 20, 1000)
	if got := present(t, s); len(got) != 20 {
		t.Fatalf("left %v", got)
	}
}

func TestAgeEviction(t *testing.T) {
	clock := newClock()
	t0 := clock.Now()
	at := func(h int) { clock.Advance(t0.Add(time.Duration(h) * time.Hour).Sub(clock.Now())) }
	// Entries unused for 48h go; passes allow an hour more for the
	// imprecision of access times, so the cutoff is 49h before the pass.
	s := openTest(t, Options{Now: clock.Now, AgeThreshold: 48 * time.Hour})
	putSettled(t, s, 0, 100) // t0: the first Put runs the first pass
	at(12)
	putSettled(t, s, 1, 100)
	at(20)
	putSettled(t, s, 2, 100)
	at(30)
	putSettled(t, s, 3, 100) // a pass: nothing is old yet
	if got := present(t, s); fmt.Sprint(got) != "[0 1 2 3]" {
		t.Fatalf("t0+30h: left %v", got)
	}
	at(50)
	checkGet(t, s, 2, 100)   // used: refreshed to t0+50h
	putSettled(t, s, 4, 100) // entry 0 is 50h old, but no pass is due until t0+54h
	if got := present(t, s); fmt.Sprint(got) != "[0 1 2 3 4]" {
		t.Fatalf("t0+50h: pass ran within a day of the last: left %v", got)
	}
	at(54)
	putSettled(t, s, 5, 100) // a pass, cutoff t0+5h: entry 0 goes
	if got := present(t, s); fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Fatalf("t0+54h: left %v", got)
	}
	stamp, err := os.ReadFile(filepath.Join(s.dir, trimName))
	if err != nil || string(stamp) != fmt.Sprintf("%d\n", clock.Now().Unix()) {
		t.Fatalf("trim stamp %q, %v", stamp, err)
	}
	at(78)
	putSettled(t, s, 6, 100) // a pass, cutoff t0+29h: entry 1 goes, 3 (t0+30h) and 2 (used) stay
	if got := present(t, s); fmt.Sprint(got) != "[2 3 4 5 6]" {
		t.Fatalf("t0+78h: left %v", got)
	}
}

func TestTrimStampFromOtherProcess(t *testing.T) {
	clock := newClock()
	dir := filepath.Join(t.TempDir(), "cache")
	a := openTest(t, Options{Dir: dir, Now: clock.Now, AgeThreshold: time.Hour})
	putSettled(t, a, 0, 100)
	clock.Advance(3 * time.Hour)
	// Another process ran a pass just now: a second store sees the stamp
	// and does not run its own.
	writeRaw(t, filepath.Join(a.dir, trimName), []byte(fmt.Sprintf("%d\n", clock.Now().Unix())))
	b := openTest(t, Options{Dir: dir, Now: clock.Now, AgeThreshold: time.Hour})
	putSettled(t, b, 1, 100)
	if got := present(t, b); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("pass ran although another process had just run one: left %v", got)
	}
	// A stamp from the far future is not trusted.
	writeRaw(t, filepath.Join(a.dir, trimName), []byte(fmt.Sprintf("%d\n", clock.Now().Add(1000*time.Hour).Unix())))
	c := openTest(t, Options{Dir: dir, Now: clock.Now, AgeThreshold: time.Hour})
	putSettled(t, c, 2, 100)
	// The pass's cutoff is now-2h: entry 0 (t0) goes, entry 1 (t0+3h) stays.
	if got := present(t, c); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("a future stamp postponed the pass: left %v", got)
	}
}

func TestPassRemovesLeftovers(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now})
	ctx := context.Background()
	putSettled(t, s, 1, 100)
	putSettled(t, s, 2, 100)
	putSettled(t, s, 3, 100)
	leaf1 := s.leafDir(s.digests(testKey(1)))
	leaf2 := s.leafDir(s.digests(testKey(2)))
	// A dead writer's temporary file, a binary whose record never came,
	// and a leaf holding only a build lock.
	writeRaw(t, filepath.Join(leaf1, tempPrefix+"dead"), []byte("partial"))
	os.Remove(srcPath(leaf2, 0))
	unlock, err := s.Lock(ctx, testKey(4))
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	leaf4 := s.leafDir(s.digests(testKey(4)))
	// A builder still holds key 5's lock: its leaf stays.
	unlock5, err := s.Lock(ctx, testKey(5))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock5()
	leaf5 := s.leafDir(s.digests(testKey(5)))

	clock.Advance(25 * time.Hour)
	putSettled(t, s, 6, 100) // runs the daily pass
	if _, err := os.Stat(filepath.Join(leaf1, tempPrefix+"dead")); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	if _, err := os.Stat(binPath(leaf2, 0)); !os.IsNotExist(err) {
		t.Errorf("orphan binary left: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(leaf4))); !os.IsNotExist(err) {
		t.Errorf("empty leaf and parents left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(leaf5, lockName)); err != nil {
		t.Errorf("held build lock removed: %v", err)
	}
	checkGet(t, s, 1, 100)
	checkGet(t, s, 3, 100)
	r, err := s.Verify(ctx, false)
	if err != nil || r.Entries != 3 || r.Damaged+r.Incomplete != 0 {
		t.Fatalf("Verify = %+v, %v", r, err)
	}
	_, total := walkSum(t, s)
	if size, _ := s.Size(ctx); size != total {
		t.Errorf("size file %d, walk %d", size, total)
	}
}

func TestSizeFileRebuilt(t *testing.T) {
	ctx := context.Background()
	for _, content := range []string{"", "garbage", "-5\n", "12", "007\n", "99999999999999999999\n", "9000000000000000000\n"} {
		t.Run(fmt.Sprintf("%q", content), func(t *testing.T) {
			s := openTest(t, Options{})
			putSettled(t, s, 1, 1000)
			putSettled(t, s, 2, 1000)
			_, total := walkSum(t, s)
			writeRaw(t, filepath.Join(s.shardsDir(), shardSizeName), []byte(content))
			if got, err := s.Size(ctx); err != nil || got != total {
				t.Fatalf("Size = %d, %v; want %d", got, err, total)
			}
			os.Remove(filepath.Join(s.shardsDir(), shardSizeName))
			putSettled(t, s, 3, 1000)
			_, total = walkSum(t, s)
			if got, err := s.Size(ctx); err != nil || got != total {
				t.Fatalf("after Put: Size = %d, %v; want %d", got, err, total)
			}
		})
	}
}

func TestEvictionCorrectsDrift(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now, MaxSize: 1 << 20})
	fillAged(t, s, clock, 5, 1000)
	// A total far over the limit (a crashed writer's lost update, say):
	// the next Put finds the total past the ceiling and nobody evicting,
	// so it runs a step itself, which finds the cache within its limit and
	// evicts nothing, only corrects the total; then the Put is stored.
	s.updateTotals(context.Background(), func(t *shardTotals) bool {
		t.bytes[shardOf(s, 0)] += 5000000
		return true
	})
	putSettled(t, s, 5, 1000)
	if got := present(t, s); len(got) != 6 {
		t.Fatalf("left %v", got)
	}
	_, total := walkSum(t, s)
	if size, _ := s.Size(context.Background()); size != total {
		t.Fatalf("size file %d, walk %d", size, total)
	}
}
