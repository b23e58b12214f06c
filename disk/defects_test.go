package disk

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// TestEvictionSkipsUnreadable checks that what a pass cannot read (a file
// where a directory level should be, a dangling link, as a run under sudo
// or a stray copy leaves) is skipped: the rest is evicted and the size
// file is written.
func TestEvictionSkipsUnreadable(t *testing.T) {
	clock := newClock()
	s := openTest(t, Options{Now: clock.Now, EvictionDisabled: true})
	mustPut(t, s, 100, 1000)
	per := entrySize(t, s, 100)
	s.Delete(context.Background(), testKey(100))
	for _, level := range []int{1, 2, 3, 4} {
		for _, kind := range []string{"file", "dangling symlink"} {
			t.Run(kind+" at level "+string(rune('0'+level)), func(t *testing.T) {
				clock := newClock()
				s := openTest(t, Options{Now: clock.Now, MaxSize: 10*per + per/2})
				fillAged(t, s, clock, 10, 1000)
				// The stray sits beside entry 0's directory at the given level.
				dir := s.leafDir(s.digests(testKey(0)))
				for range levels - level {
					dir = filepath.Dir(dir)
				}
				stray := filepath.Join(filepath.Dir(dir), strings.Repeat("0", len(filepath.Base(dir))))
				if kind == "file" {
					writeRaw(t, stray, []byte("not a directory"))
				} else if err := os.Symlink("/nonexistent/kcache", stray); err != nil {
					t.Fatal(err)
				}
				clock.Advance(2 * time.Hour)
				mustPut(t, s, 10, 1000)
				settle(t, s)
				got := present(t, s)
				if len(got) > 5 {
					t.Fatalf("nothing evicted past the stray entry: left %v", got)
				}
				_, total := walkSum(t, s)
				if size, err := s.Size(context.Background()); err != nil || size != total {
					t.Fatalf("size file %d (%v), walk %d", size, err, total)
				}
			})
		}
	}
}

// TestCommitOverLeftoverKeepsSize checks that writing over a dead writer's
// binary, which no total ever counted, does not subtract it.
func TestCommitOverLeftoverKeepsSize(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	for i := 10; i < 20; i++ {
		mustPut(t, s, i, 1000)
	}
	mustPut(t, s, 1, 1000)
	// A writer killed after renaming its binary, before its record: the
	// binary is there, uncounted.
	leaf := s.leafDir(s.digests(testKey(2)))
	if err := os.MkdirAll(leaf, 0o700); err != nil {
		t.Fatal(err)
	}
	writeRaw(t, binPath(leaf, 0), testBinary(2, 5000))
	mustPut(t, s, 2, 1000)
	size, err := s.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, total := walkSum(t, s)
	if size != total {
		t.Fatalf("size file %d after a commit over a leftover, entries hold %d", size, total)
	}
}

// TestDeleteDuringEvictionCountedOnce runs a Delete at each point of an
// eviction step through the deleted entry's shard and checks that the
// totals end equal to what is on disk: neither the Delete nor the step may
// count a removal the other already counted.
func TestDeleteDuringEvictionCountedOnce(t *testing.T) {
	for _, point := range []string{"listing", "evicting", "counting"} {
		t.Run(point, func(t *testing.T) {
			clock := newClock()
			s := openTest(t, Options{Now: clock.Now, MaxSize: 1 << 30})
			fillAged(t, s, clock, 20, 1000)
			settle(t, s)
			ctx := context.Background()
			for i := 19; i >= 15; i-- {
				s.hook = func(at string) {
					if at == point {
						if err := s.Delete(ctx, testKey(i)); err != nil {
							t.Error(err)
						}
					}
				}
				if _, _, err := s.step(ctx, []int{shardOf(s, i)}, false, stepPlan{wait: true}, nil); err != nil {
					t.Fatal(err)
				}
				s.hook = nil
			}
			if got := present(t, s); len(got) != 15 {
				t.Fatalf("left %v", got)
			}
			_, total := walkSum(t, s)
			if size, err := s.Size(ctx); err != nil || size != total {
				t.Fatalf("size file %d (%v), entries hold %d", size, err, total)
			}
		})
	}
}

// TestNoLostUpdateAcrossJournalSwap has another store write into a shard
// right after a step renamed the shard's new journal into place, before
// the step set the shard's total. Before, the step held the lock of the
// old journal only: the writer appended to the new one and added to the
// total, and the step's total then overwrote the addition.
func TestNoLostUpdateAcrossJournalSwap(t *testing.T) {
	s := openTest(t, Options{})
	w := openTest(t, Options{Dir: s.root})
	ctx := context.Background()
	for i := range 20 {
		mustPut(t, s, i, 1000)
	}
	settle(t, s)
	x := shardOf(s, 3)
	// Two records for one leaf: the step rewrites the journal.
	if err := s.Delete(ctx, testKey(3)); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, 3, 1200)
	j := 1000
	for shardOf(s, j) != x {
		j++
	}
	done := make(chan error, 1)
	s.hook = func(at string) {
		if at != "swapped" {
			return
		}
		go func() {
			done <- w.Put(ctx, testKey(j), kcache.Entry{Binary: testBinary(j, 3000)})
		}()
		select {
		case <-done:
			done <- nil
		case <-time.After(300 * time.Millisecond): // blocked on the journal's lock
		}
	}
	if _, _, err := s.step(ctx, []int{x}, false, stepPlan{wait: true}, nil); err != nil {
		t.Fatal(err)
	}
	s.hook = nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkGet(t, s, j, 3000)
	_, total := walkSum(t, s)
	if size, err := s.Size(ctx); err != nil || size != total {
		t.Fatalf("size file %d (%v), entries hold %d", size, err, total)
	}
}

// helperStep runs one step through the shard of key KCACHE_DISK_SEED in
// the cache in KCACHE_DISK_DIR, waiting for the shard's locks.
func helperStep() error {
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR")})
	if err != nil {
		return err
	}
	_, _, err = s.step(context.Background(), []int{shardOf(s, envInt("KCACHE_DISK_SEED"))}, false, stepPlan{wait: true}, nil)
	return err
}

// TestKilledStepsTempsRemoved kills a step while it waits for its shard's
// journal lock, its new journal written to a temporary file in the shards
// folder: the next maintenance pass removes the file. Before, nothing
// did, and every killed step left one for good.
func TestKilledStepsTempsRemoved(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	for i := range 10 {
		mustPut(t, s, i, 1000)
	}
	settle(t, s)
	if err := s.Delete(ctx, testKey(3)); err != nil { // the journal needs a rewrite
		t.Fatal(err)
	}
	j, err := s.lockShardFile(ctx, s.journalPath(shardOf(s, 3)), time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	cmd := helper(os.Args[0], "step", "KCACHE_DISK_DIR="+s.root, "KCACHE_DISK_SEED=3", noExitSleep)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	temps := func() []string { return files(t, s.shardsDir(), tempPrefix+"*") }
	for deadline := time.Now().Add(30 * time.Second); len(temps()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the step wrote no temporary file")
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	j.Close()
	old := time.Now().Add(-time.Hour) // the next day's pass, as far as the file's age goes
	for _, p := range temps() {
		os.Chtimes(p, old, old)
	}
	if err := s.fullPass(ctx, passOptions{wait: true}); err != nil {
		t.Fatal(err)
	}
	if left := temps(); len(left) != 0 {
		t.Errorf("left after the pass: %v", left)
	}
}

// TestLostJournalsRecounted empties every shard journal, as a power loss
// before the file system wrote them back can, while the entries and the
// size file survive; then writers go on. Before, each step set its shard's
// total from the journal's nothing, so the entries it no longer named were
// hidden from eviction and the totals: the cache grew past its ceiling
// until the daily pass. Now the first step that counts less than the
// recorded total schedules the full pass at once.
func TestLostJournalsRecounted(t *testing.T) {
	const maxSize = 64 << 10
	s := openTest(t, Options{MaxSize: maxSize})
	for i := range 14 {
		mustPut(t, s, i, 4000)
	}
	settle(t, s)
	for _, j := range files(t, s.shardsDir(), "[0-9a-f][0-9a-f]") {
		if err := os.Truncate(j, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 100; i < 140; i++ {
		putSettled(t, s, i, 4000)
	}
	_, total := walkSum(t, s)
	t.Logf("cache holds %d bytes after the journals were lost; ceiling %d", total, maxSize*11/10)
	if total > maxSize*11/10 {
		t.Errorf("cache holds %d bytes, past its ceiling", total)
	}
	if size, err := s.Size(context.Background()); err != nil || size != total {
		t.Errorf("size file %d (%v), entries hold %d", size, err, total)
	}
}
