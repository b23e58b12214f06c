package disk

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

func TestCountersRoundTrip(t *testing.T) {
	c := Counters{MemoryHits: 1, DiskHits: 2, RemoteHits: 3, Misses: 4, DiskMisses: 5, DiskErrors: 6, Builds: 7,
		FailedBuilds: 8, Waited: 9, Evictions: 10, EvictedBytes: 11, BuildTime: 12, SavedTime: 13,
		RemoteMisses: 14, RemoteErrors: 15, RemoteRejected: 16, RemoteTimeouts: 17, RemoteWaited: 18}
	var got Counters
	if err := got.decode(c.encode()); err != nil || got != c {
		t.Fatalf("decode(encode(c)) = %+v, %v; want %+v", got, err, c)
	}
}

func TestCountersDecodeErrors(t *testing.T) {
	tests := []struct{ name, data string }{
		{"empty", ""},
		{"header", "kcache-counters 2\nbuilds 1\n"},
		{"negative", countersHeader + "\nbuilds -1\n"},
		{"not a number", countersHeader + "\nbuilds x\n"},
		{"repeated", countersHeader + "\nbuilds 1\nbuilds 2\n"},
		{"no value", countersHeader + "\nbuilds\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Counters
			if err := c.decode([]byte(tt.data)); !errors.Is(err, kcache.ErrMiss) {
				t.Errorf("decode(%q) = %v, want a decode error", tt.data, err)
			}
		})
	}
	// A counter a later version added is skipped, the rest kept.
	var c Counters
	if err := c.decode([]byte(countersHeader + "\nbuilds 3\nfuture_thing 9\n")); err != nil || c.Builds != 3 {
		t.Errorf("unknown counter: %+v, %v", c, err)
	}
}

func FuzzDecodeCounters(f *testing.F) {
	f.Add(Counters{Builds: 3, SavedTime: time.Second}.encode())
	f.Add([]byte(countersHeader + "\n"))
	f.Add([]byte(countersHeader + "\nbuilds 1\nbuilds 1\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Counters
		if err := c.decode(data); err != nil {
			if !errors.Is(err, kcache.ErrMiss) {
				t.Fatalf("error is not a decode error: %v", err)
			}
			return
		}
		var again Counters
		if err := again.decode(c.encode()); err != nil || again != c {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, c)
		}
	})
}

// TestAddCountersConcurrent merges from many goroutines at once, each with
// its own Store as separate processes have: no count may be lost.
func TestAddCountersConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	const workers, rounds = 8, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			s := openTest(t, Options{Dir: dir})
			for range rounds {
				if err := s.MergeStats(context.Background(), kcache.Stats{Disk: kcache.TierStats{Hits: 2}, Builds: 1, SavedTime: time.Millisecond}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	c, err := openTest(t, Options{Dir: dir}).Counters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.DiskHits != 2*workers*rounds || c.Builds != workers*rounds || c.Misses != workers*rounds ||
		c.SavedTime != workers*rounds*time.Millisecond {
		t.Errorf("counters %+v after %d merges", c, workers*rounds)
	}
}

func TestCountersSurviveClearAndDamage(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	if err := s.CountEvictions(ctx, 3, 300); err != nil {
		t.Fatal(err)
	}
	if err := s.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Counters(ctx); err != nil || c.Evictions != 3 || c.EvictedBytes != 300 {
		t.Fatalf("after Clear: %+v, %v", c, err)
	}
	writeRaw(t, filepath.Join(s.Dir(), countersName), []byte("garbage"))
	if _, err := s.Counters(ctx); err == nil {
		t.Fatal("damaged counters read without error")
	}
	// A merge starts damaged counters afresh rather than failing forever.
	if err := s.AddCounters(ctx, Counters{Builds: 1}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Counters(ctx); err != nil || c != (Counters{Builds: 1}) {
		t.Fatalf("after a merge over damage: %+v, %v", c, err)
	}
	if err := s.ZeroCounters(ctx); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Counters(ctx); c != (Counters{}) {
		t.Errorf("after ZeroCounters: %+v", c)
	}
}

// TestCacheCloseMergesOnce checks the contract between kcache.Cache and the
// disk tier: a hit writes no counters; Close merges the process's counts,
// and a second Close adds nothing.
func TestCacheCloseMergesOnce(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	c := kcache.New(kcache.Config{}, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: s})
	build := func(context.Context) ([]byte, error) { return []byte("binary"), nil }
	for range 3 {
		if _, err := c.GetOrBuild(ctx, testKey(1), build); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), countersName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("counters written before Close: %v", err)
	}
	for range 2 {
		if err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Builds != 1 || got.DiskHits != 2 || got.Misses != 1 || got.DiskMisses != 1 {
		t.Errorf("counters %+v; want 1 build, 2 disk hits, 1 miss", got)
	}
}
