package disk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kcache/kcache"
)

// helperOnePut is a short process that never closes its store, as every
// CLI run and every application under the OpenCL layer: it opens the cache
// under a limit of KCACHE_DISK_MAX bytes, puts entry KCACHE_DISK_SEED,
// looks it up, appends "<seed> stored" or "<seed> refused" to
// KCACHE_DISK_OUT, and exits, its background work unfinished.
func helperOnePut() error {
	s, err := Open(Options{Dir: os.Getenv("KCACHE_DISK_DIR"), MaxSize: int64(envInt("KCACHE_DISK_MAX"))})
	if err != nil {
		return err
	}
	s.sync = false
	ctx := context.Background()
	i := envInt("KCACHE_DISK_SEED")
	if err := s.Put(ctx, testKey(i), kcache.Entry{Binary: testBinary(i, writerEntry)}); err != nil {
		return fmt.Errorf("put %d: %w", i, err)
	}
	verdict := "stored"
	if _, err := s.Get(ctx, testKey(i)); err != nil {
		verdict = "refused"
	}
	return appendLine(os.Getenv("KCACHE_DISK_OUT"), fmt.Sprintf("%d %s", i, verdict))
}

// noExitSleep keeps the race detector from sleeping a second at a child's
// exit, which would give the child's background goroutines a second of
// life no real process has.
const noExitSleep = "GORACE=atexit_sleep_ms=0"

// oneShots runs n one-Put processes in turn on cache under maxSize and
// returns their verdicts in order.
func oneShots(t *testing.T, cache string, n, maxSize int) []string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "verdicts")
	for i := range n {
		cmd := helper(os.Args[0], "oneput", "KCACHE_DISK_DIR="+cache, "KCACHE_DISK_SEED="+strconv.Itoa(i),
			"KCACHE_DISK_MAX="+strconv.Itoa(maxSize), "KCACHE_DISK_OUT="+out, noExitSleep)
		if err := cmd.Run(); err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " "))
}

// TestShortProcessesKeepCaching runs one-Put processes that never call
// Close against a cache that fills after about 16 of them: the cache must
// go on storing every process's entry (before, once at its ceiling it
// refused every one, since the background eviction each Put started died
// with its process), and stay within its ceiling.
func TestShortProcessesKeepCaching(t *testing.T) {
	const procs, last, maxSize = 60, 20, 64 << 10
	cache := filepath.Join(t.TempDir(), "cache")
	verdicts := oneShots(t, cache, procs, maxSize)
	stored := 0
	for i := len(verdicts) - 2*last; i < len(verdicts); i += 2 {
		if verdicts[i+1] == "stored" {
			stored++
		}
	}
	watch := openTest(t, Options{Dir: cache})
	total, err := watch.walkTotal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the last %d processes stored %d entries; cache holds %d bytes", last, stored, total)
	if stored != last {
		t.Errorf("the last %d processes stored %d entries, want all", last, stored)
	}
	if total > maxSize*11/10 {
		t.Errorf("cache holds %d bytes, over 1.1 x MaxSize", total)
	}
	if c, err := watch.Counters(context.Background()); err != nil || c.Evictions == 0 {
		t.Errorf("evictions counted: %+v, %v", c, err)
	}
}

// TestRefusalsCounted holds both evictors slots, as two processes busy
// evicting would, while one-Put processes fill the cache past its ceiling:
// the Puts past it are refused, since eviction is someone else's, and each
// refusal shows in the persistent counters (kcache stats).
func TestRefusalsCounted(t *testing.T) {
	const procs, maxSize = 24, 64 << 10
	cache := filepath.Join(t.TempDir(), "cache")
	watch := openTest(t, Options{Dir: cache})
	locks, err := watch.openStepLocks()
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Close()
	for k := range evictors {
		if _, err := watch.lockStep(context.Background(), locks, shardCount+k, 0); err != nil {
			t.Fatal(err)
		}
	}
	verdicts := oneShots(t, cache, procs, maxSize)
	refused := strings.Count(strings.Join(verdicts, " "), "refused")
	c, err := watch.Counters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d refused; counters say %d", refused, procs, c.DiskDropped)
	if refused == 0 || c.DiskDropped != int64(refused) {
		t.Errorf("%d Puts refused, %d counted", refused, c.DiskDropped)
	}
}
