package main

import "testing"

// TestPruneStoresLimit: prune --max-size stores the cache's own limit,
// which stats shows and a process's smaller KCACHE_MAX_SIZE no longer
// lowers; --dry-run stores nothing, and --max-size 0 removes it.
func TestPruneStoresLimit(t *testing.T) {
	dir := t.TempDir()
	putFakes(t, testStore(t, dir), "Fake GPU", 2)
	var p pruneJSON
	var stats statsJSON
	runJSONOut(t, dir, &p, "prune", "--dry-run", "--max-size", "1GiB", "--json")
	runJSONOut(t, dir, &stats, "stats", "--json")
	if stats.StoredMaxSize != 0 {
		t.Fatalf("a dry run stored %d", stats.StoredMaxSize)
	}
	runJSONOut(t, dir, &p, "prune", "--max-size", "1GiB", "--json")
	runJSONOut(t, dir, &stats, "stats", "--json")
	if stats.StoredMaxSize != 1<<30 || stats.Entries != 2 {
		t.Fatalf("after prune --max-size 1GiB: %+v", stats)
	}
	runJSONOut(t, dir, &p, "prune", "--max-size", "0", "--json")
	runJSONOut(t, dir, &stats, "stats", "--json")
	if stats.StoredMaxSize != 0 {
		t.Fatalf("after prune --max-size 0: stored %d", stats.StoredMaxSize)
	}
}
