package cuda

import (
	"context"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/internal/slowrecords"
)

// TestCloseWaitsForRecords checks that Close returns only once the
// dependency records a key began to write are written, so that a process
// that closes its cache and exits leaves them to the next.
func TestCloseWaitsForRecords(t *testing.T) {
	gpu := requireGPU(t)
	inc := t.TempDir()
	writeUserHeader(t, inc) // settled: a record holds no file changed within a tick of its scan
	st, err := disk.Open(disk.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	slow := &slowrecords.Store{Store: st}
	c, err := NewCache(gpu, kcache.New(kcache.DefaultConfig(func(string) string { return "" }), nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: slow}), CacheOptions{Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Code: []byte("#include \"mine.h\"\nextern \"C\" __global__ void k(int* p) { *p = MINE; }\n"), Options: []string{"-I" + inc}}
	if _, err := c.Key(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	slow.CheckClose(t, c.Close)
}
