package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/opencl"
)

// TestDamagedCountedOneWay damages entries three ways and puts a rebuild
// claim beside them: stats (human and JSON) and ls count the same entries
// and the same damaged slots, the claim is neither listed nor counted, and
// verify, which also reads binaries, finds those and the checksum damage.
func TestDamagedCountedOneWay(t *testing.T) {
	dir := t.TempDir()
	st := testStore(t, dir)
	ids := putFakes(t, st, "Fake GPU", 6)
	claim := fakeKey("Fake GPU", 0)
	claim.Image.Format = opencl.FormatRebuildClaim
	if err := st.Put(context.Background(), claim, kcache.Entry{Binary: []byte("claim")}); err != nil {
		t.Fatal(err)
	}
	find := func(id string) (rec, bin string, binSize int64) {
		in, err := st.Find(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return in.RecordPath(), in.BinaryPath(), in.BinarySize
	}
	rec0, _, _ := find(ids[0])
	_, bin1, size1 := find(ids[1])
	_, bin2, _ := find(ids[2])
	b, _ := os.ReadFile(rec0)
	b[len(b)/2] ^= 0x40 // a record that does not decode
	os.WriteFile(rec0, b, 0o600)
	b, _ = os.ReadFile(bin1)
	os.WriteFile(bin1, b[:len(b)-int(size1)], 0o600) // a binary gone (the record shares its file)
	b, _ = os.ReadFile(bin2)
	b[len(b)/2] ^= 0x40 // same length, wrong checksum: only verify sees it
	os.WriteFile(bin2, b, 0o600)

	var stats statsJSON
	runJSONOut(t, dir, &stats, "stats", "--json")
	var ls []entryJSON
	runJSONOut(t, dir, &ls, "ls", "--json")
	lsRun := run(t, dir, "ls")
	human := run(t, dir, "stats")
	if stats.Entries != 4 || len(ls) != 4 || stats.Damaged != 2 {
		t.Errorf("stats: %d entries, %d damaged; ls: %d entries; want 4, 2, 4", stats.Entries, stats.Damaged, len(ls))
	}
	if !strings.Contains(lsRun.stderr, "kcache: 2 damaged entries not listed") {
		t.Errorf("ls stderr %q, want 2 damaged", lsRun.stderr)
	}
	if !regexp.MustCompile(`(?m)^entries +4$`).MatchString(human.stdout) || !regexp.MustCompile(`(?m)^damaged +2 `).MatchString(human.stdout) {
		t.Errorf("human stats:\n%s", human.stdout)
	}
	for _, e := range ls {
		if e.Format == opencl.FormatRebuildClaim {
			t.Errorf("ls lists the rebuild claim %s", e.ID)
		}
	}
	var v verifyJSON
	r := run(t, dir, "verify", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Corrupt != 3 || v.OK != 3 {
		t.Errorf("verify: %+v, %v; want 3 corrupt (the 2 that stats counts and a bad checksum), 3 ok (the claim is not an entry)", v, err)
	}
}

// TestCountersOneDefinition builds a good and a broken file, then reads
// the counters as a person and as a script: each counter is the same
// number in both, and JSON carries the hit rate.
func TestCountersOneDefinition(t *testing.T) {
	requireOpenCL(t)
	kernels := writeKernels(t, 1)
	dir := t.TempDir()
	good := filepath.Join(kernels, "sub", "k0.cl")
	run(t, dir, "build", good, filepath.Join(kernels, "broken.cl"))
	run(t, dir, "build", good, good)
	var stats statsJSON
	runJSONOut(t, dir, &stats, "stats", "--json")
	c := stats.Counters
	if c.Builds != 1 || c.FailedBuilds != 1 || c.DiskHits != 1 || c.MemoryHits != 1 || c.Misses != 2 {
		t.Fatalf("counters %+v", c)
	}
	if want := 2.0 / 4; stats.HitRate != want {
		t.Errorf("hit_rate %v, want %v", stats.HitRate, want)
	}
	human := run(t, dir, "stats").stdout
	for _, want := range []string{
		fmt.Sprintf("builds +%d\n", c.Builds),
		fmt.Sprintf("failed builds +%d\n", c.FailedBuilds),
		fmt.Sprintf("misses +%d\n", c.Misses),
		fmt.Sprintf("hits +%d ", c.MemoryHits+c.DiskHits+c.RemoteHits),
		"hit rate +" + regexp.QuoteMeta(strconv.FormatFloat(100*stats.HitRate, 'f', 1, 64)) + "%\n",
	} {
		if !regexp.MustCompile(`(?m)^` + want).MatchString(human) {
			t.Errorf("human stats lack %q:\n%s", want, human)
		}
	}
}
