package disk

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

func TestFind(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	ids := map[string]bool{}
	for i := range 40 {
		mustPut(t, s, i, 64)
		ids[testKey(i).Digest().String()] = true
	}
	// Forty IDs share first hex digits: some one-digit prefix is ambiguous.
	var ambiguous string
	counts := map[string]int{}
	for id := range ids {
		counts[id[:1]]++
		if counts[id[:1]] > 1 {
			ambiguous = id[:1]
		}
	}
	for id := range ids {
		in, err := s.Find(ctx, strings.ToUpper(id[:10]))
		if err != nil || in.ID() != id {
			t.Fatalf("Find(%s) = %s, %v", id[:10], in.ID(), err)
		}
	}
	var amb *AmbiguousError
	if _, err := s.Find(ctx, ambiguous); !errors.As(err, &amb) || amb.Count != counts[ambiguous] || len(amb.Matches) != amb.Count {
		t.Errorf("Find(%q) = %v; want ambiguity among %d", ambiguous, err, counts[ambiguous])
	}
	for _, bad := range []string{"", "xyz", strings.Repeat("a", 65)} {
		if _, err := s.Find(ctx, bad); err == nil || errors.Is(err, ErrNoEntry) {
			t.Errorf("Find(%q) = %v; want a bad-ID error", bad, err)
		}
	}
	missing := strings.Repeat("0", 64)
	if ids[missing] {
		t.Skip("improbable digest")
	}
	if _, err := s.Find(ctx, missing); !errors.Is(err, ErrNoEntry) {
		t.Errorf("Find(missing) = %v; want ErrNoEntry", err)
	}
}

func TestSummarize(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{MaxSize: 1 << 30})
	putLegacy(t, s, 0, 100)
	for i := 1; i < 5; i++ {
		mustPut(t, s, i, 100)
	}
	other := testKey(9)
	other.Device.Name = "other device"
	if err := s.Put(ctx, other, kcache.Entry{Binary: testBinary(9, 100)}); err != nil {
		t.Fatal(err)
	}
	// A binary without its record is damaged; a record damaged inside is
	// found by Verify, not by a summary, which reads one record per device.
	if err := os.Remove(s.leafDir(testKey(0).Digests()) + "/0.src"); err != nil {
		t.Fatal(err)
	}
	writeRaw(t, s.leafDir(testKey(1).Digests())+"/0.src", []byte("damaged"))
	sum, err := s.Summarize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Entries != 5 || sum.Damaged != 1 || sum.MaxSize != 1<<30 || len(sum.Groups) != 2 {
		t.Fatalf("summary %+v", sum)
	}
	if g := sum.Groups[0]; g.Device != "test device (1.0)" || g.Entries != 4 || g.Compiler != "fake 1" {
		t.Errorf("largest group %+v", g)
	}
	var total int64
	for _, g := range sum.Groups {
		total += g.Bytes
	}
	if total != sum.Bytes {
		t.Errorf("groups hold %d bytes, summary %d", total, sum.Bytes)
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now})
	for i := range 6 {
		mustPut(t, s, i, 1000)
		clock.Advance(time.Hour * 24)
	}
	size := func(is ...int) (n int64) {
		for _, i := range is {
			n += entrySize(t, s, i)
		}
		return n
	}
	sizes := size(0, 1, 2)

	// Dry run: reports, removes nothing, counts nothing.
	r, err := s.Prune(ctx, PruneOptions{OlderThan: 3*24*time.Hour + time.Minute, DryRun: true})
	if err != nil || r.Removed != 3 || r.Entries != 3 {
		t.Fatalf("dry run: %+v, %v", r, err)
	}
	if n, _ := walkSum(t, s); n != 6 {
		t.Fatalf("dry run removed entries: %d left", n)
	}

	// By age: entries 0, 1, 2 are older than three days and a minute.
	r, err = s.Prune(ctx, PruneOptions{OlderThan: 3*24*time.Hour + time.Minute})
	if err != nil || r.Removed != 3 || r.Freed != sizes {
		t.Fatalf("by age: %+v, %v", r, err)
	}
	// By size: down to two entries, the least recently used go first.
	left := size(4, 5)
	sizes += size(3)
	r, err = s.Prune(ctx, PruneOptions{MaxSize: left})
	if err != nil || r.Removed != 1 || r.Entries != 2 || r.RemovedEntries[0].Key.Equal(testKey(3)) == false {
		t.Fatalf("by size: %+v, %v", r, err)
	}
	for i, hit := range []bool{false, false, false, false, true, true} {
		if isHit(t, s, i, 1000) != hit {
			t.Errorf("entry %d: hit %v, want %v", i, !hit, hit)
		}
	}
	if c, _ := s.Counters(ctx); c.Evictions != 4 || c.EvictedBytes != sizes {
		t.Errorf("counters %+v; want 4 evictions", c)
	}
	if total, _ := s.Size(ctx); total != left {
		t.Errorf("size file says %d, want %d", total, left)
	}
}

func TestCompareKeys(t *testing.T) {
	a := testKey(1)
	tests := []struct {
		name   string
		change func(k *kcache.Key)
		want   []Change
	}{
		{"same", func(*kcache.Key) {}, nil},
		{"driver", func(k *kcache.Key) { k.Device.Driver = "2.0" }, []Change{{"device", "driver", "1.0", "2.0"}}},
		{"options", func(k *kcache.Key) { k.Options.Compile = "-O0" }, []Change{{"options", "", "-cl-std=CL3.0", "-O0"}}},
		{"env added", func(k *kcache.Key) { k.Options.Env = append(k.Options.Env, kcache.EnvVar{Name: "POCL_X", Value: "1"}) },
			[]Change{{"env", "POCL_X", "", "1"}}},
		{"header", func(k *kcache.Key) {
			k.Image.Headers = []kcache.Header{kcache.HeaderOf("common.h", []byte("#define N 2"))}
		},
			[]Change{{"header", "common.h", kcache.HeaderOf("", []byte("#define N 1")).Digest.String()[:16], kcache.HeaderOf("", []byte("#define N 2")).Digest.String()[:16]}}},
		{"spec", func(k *kcache.Key) { k.Spec = nil }, []Change{{"spec", "1", "01", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := testKey(1)
			tt.change(b)
			if got := CompareKeys(a, b); !slices.Equal(got, tt.want) {
				t.Errorf("CompareKeys = %v, want %v", got, tt.want)
			}
		})
	}
}
