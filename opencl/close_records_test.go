package opencl

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/internal/slowrecords"
)

// TestCloseWaitsForRecords checks that Close returns only once the
// dependency records a key began to write are written: a key's scan
// waits for its record for a while and then leaves the write to go on,
// and a process that closed its cache and exited would lose it.
func TestCloseWaitsForRecords(t *testing.T) {
	f := testFixture(t)
	wd := t.TempDir()
	t.Chdir(wd)
	writeFile(t, filepath.Join(wd, "inc_scale.cl"), "#define SCALE 1.0f\n", time.Hour)
	st, err := disk.Open(disk.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	slow := &slowrecords.Store{Store: st}
	c := NewCache(f.ctx, kcache.New(kcache.DefaultConfig(func(string) string { return "" }), nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: slow}), CacheOptions{Environ: []string{}})
	if _, err := c.Key(f.dev, Source{Code: saxpyWith("#include \"inc_scale.cl\"\n")}); err != nil {
		t.Fatal(err)
	}
	slow.CheckClose(t, c.Close)
}
