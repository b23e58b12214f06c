package cuda

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// slowRecords is a disk store whose dependency records take a while to
// write, as on a loaded or networked file system.
type slowRecords struct {
	*disk.Store
	writing, written atomic.Int32
}

// Put writes e, after a wait where it is a dependency record.
func (s *slowRecords) Put(ctx context.Context, key *kcache.Key, e kcache.Entry) error {
	if kcache.IsDependencyRecord(key) {
		s.writing.Add(1)
		defer s.writing.Add(-1)
		time.Sleep(300 * time.Millisecond) // past the scan's own wait (100 ms)
		defer s.written.Add(1)
	}
	return s.Store.Put(ctx, key, e)
}

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
	slow := &slowRecords{Store: st}
	c, err := NewCache(gpu, kcache.New(kcache.DefaultConfig(func(string) string { return "" }), nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: slow}), CacheOptions{Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Code: []byte("#include \"mine.h\"\nextern \"C\" __global__ void k(int* p) { *p = MINE; }\n"), Options: []string{"-I" + inc}}
	if _, err := c.Key(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if slow.writing.Load() == 0 && slow.written.Load() == 0 {
		t.Fatal("the key wrote no dependency record: the test proves nothing")
	}
	c.Close()
	if n := slow.writing.Load(); n != 0 {
		t.Errorf("Close returned with %d dependency records still being written", n)
	}
	if slow.written.Load() == 0 {
		t.Error("no dependency record was written")
	}
}
