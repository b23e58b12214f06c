package disk

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestStoredLimitWins stores a limit of 1 MiB in a cache holding 200
// entries of 4 KiB, then runs a process whose own limit is 100 KiB. Before,
// that process's Put evicted the cache down to half its own limit (194 of
// 200 entries went); now the stored limit, the larger, is the one it evicts
// to, and every entry stays.
func TestStoredLimitWins(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	s := openTest(t, Options{Dir: cache, MaxSize: 1 << 20})
	if err := s.SetMaxSize(context.Background(), 1<<20); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		mustPut(t, s, i, writerEntry)
	}
	settle(t, s)
	cmd := helper(os.Args[0], "writer", "KCACHE_DISK_DIR="+cache, "KCACHE_DISK_N=1",
		"KCACHE_DISK_SEED=1000", "KCACHE_DISK_MAX="+strconv.Itoa(100<<10))
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if n, _ := walkSum(t, s); n != 201 {
		t.Errorf("%d entries left after a process with a 100 KiB limit wrote, want 201", n)
	}
	// Without the stored limit, that process's limit is its own again.
	if err := s.SetMaxSize(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.StoredMaxSize(); ok {
		t.Fatal("stored limit still there")
	}
	cmd = helper(os.Args[0], "writer", "KCACHE_DISK_DIR="+cache, "KCACHE_DISK_N=1",
		"KCACHE_DISK_SEED=1001", "KCACHE_DISK_MAX="+strconv.Itoa(100<<10))
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if n, _ := walkSum(t, s); n > 25 {
		t.Errorf("%d entries left, want the cache evicted to the process's own limit", n)
	}
}
