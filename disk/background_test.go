package disk

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kcache/kcache"
)

// TestFlockRefused plays a file system that refuses flock (NFS on a
// directory opened read-only): every operation goes on without locks, one
// warning says so, and a build through the cache is stored and served.
func TestFlockRefused(t *testing.T) {
	for _, errno := range []error{unix.ENOLCK, unix.EBADF, unix.EOPNOTSUPP} {
		t.Run(errno.Error(), func(t *testing.T) {
			var buf strings.Builder
			var mu sync.Mutex
			s := openTest(t, Options{Logger: newTestLogger(&buf, &mu), MaxSize: 1 << 20})
			s.flock = func(int, int) error { return errno }
			ctx := context.Background()
			cfg := kcache.DefaultConfig(func(string) string { return "" })
			c := kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: s})
			for i := range 3 {
				r, err := c.GetOrBuild(ctx, testKey(i), func(context.Context) ([]byte, error) { return testBinary(i, 500), nil })
				if err != nil || r.Outcome != kcache.OutcomeBuilt {
					t.Fatalf("build %d: %v, %v", i, r.Outcome, err)
				}
			}
			settle(t, s)
			for i := range 3 {
				checkGet(t, s, i, 500)
			}
			unlock, err := s.Lock(ctx, testKey(0))
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			unlock()
			if err := s.Delete(ctx, testKey(0)); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			settle(t, s)
			mu.Lock()
			defer mu.Unlock()
			if n := strings.Count(buf.String(), "refuses file locks"); n != 1 {
				t.Fatalf("%d warnings about locks, want 1:\n%s", n, buf.String())
			}
		})
	}
}

// TestPutDoesNotWaitForEviction holds an eviction step in the middle of
// its work and checks that Put, Get, Lock and Delete all complete
// meanwhile.
func TestPutDoesNotWaitForEviction(t *testing.T) {
	s := openTest(t, Options{MaxSize: 40 << 10})
	ctx := context.Background()
	for i := range 30 {
		mustPut(t, s, i, 1000)
	}
	settle(t, s)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.hook = func(at string) {
		if at == "evicting" {
			once.Do(func() { close(entered) })
			<-release
		}
	}
	defer close(release)
	for i := 30; ; i++ {
		mustPut(t, s, i, 1000) // soon over MaxSize: a step starts and blocks
		select {
		case <-entered:
		case <-time.After(10 * time.Millisecond):
			if i < 200 {
				continue
			}
			t.Fatal("no eviction step started")
		}
		break
	}
	done := make(chan error)
	go func() {
		for i := 1000; i < 1020; i++ {
			if err := s.Put(ctx, testKey(i), kcache.Entry{Binary: testBinary(i, 1000)}); err != nil {
				done <- err
				return
			}
			if _, err := s.Get(ctx, testKey(i)); err != nil && !errors.Is(err, kcache.ErrMiss) {
				done <- err
				return
			}
			unlock, err := s.Lock(ctx, testKey(i))
			if err != nil {
				done <- err
				return
			}
			unlock()
		}
		done <- s.Delete(ctx, testKey(1000))
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("callers waited for an eviction step")
	}
}

// TestNextWriterTakesUpEviction leaves a cache over its limit, below its
// ceiling, as a process that exits right after its Put does, and checks
// that the next writer's Put, in another store, brings it down.
func TestNextWriterTakesUpEviction(t *testing.T) {
	a := openTest(t, Options{MaxSize: 40 << 10})
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; a.lastTotal.Load() <= 40<<10; i++ {
		mustPut(t, a, i, 1000) // no background work after Close
	}
	if _, total := walkSum(t, a); total <= 40<<10 {
		t.Fatalf("total %d: the closed store evicted", total)
	}
	b := openTest(t, Options{Dir: a.root, MaxSize: 40 << 10})
	mustPut(t, b, 100, 1000)
	settle(t, b)
	_, total := walkSum(t, b)
	if total > b.target() {
		t.Fatalf("total %d after the next writer's eviction, target %d", total, b.target())
	}
	if size, err := b.Size(context.Background()); err != nil || size != total {
		t.Fatalf("size file %d (%v), entries %d", size, err, total)
	}
}

// TestGetRacingEviction reads entries while other goroutines write and
// evict them: every read is the whole entry or a miss, and a miss caused
// by eviction is not reported as damage.
func TestGetRacingEviction(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	s := openTest(t, Options{MaxSize: 30 << 10, EvictTo: 0.6, Logger: newTestLogger(&buf, &mu)})
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				mustPut(t, s, (i*2+w)%80, 700+(i*2+w)%80)
			}
		})
	}
	hits := 0
	for r := 0; r < 4000; r++ {
		i := r % 80
		if isHit(t, s, i, 700+i) {
			hits++
		}
	}
	stop.Store(true)
	wg.Wait()
	settle(t, s)
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(buf.String(), "damaged") {
		t.Fatalf("eviction reported as damage:\n%s", buf.String())
	}
	t.Logf("%d hits of 4000 reads", hits)
}
