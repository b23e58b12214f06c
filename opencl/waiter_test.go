package opencl

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// leaveGuard bounds the test's waits for what must happen, so that a regression
// fails instead of hanging; it asserts nothing about speed.
const leaveGuard = 60 * time.Second

// stalledStore is a binary tier whose Put blocks until unblocked, as a disk
// Put that runs a long eviction pass does. It has no entries.
type stalledStore struct {
	entered chan struct{} // closed by the first Put
	unblock chan struct{}
	once    sync.Once
}

func (s *stalledStore) Get(context.Context, *kcache.Key) (kcache.Entry, error) {
	return kcache.Entry{}, kcache.ErrMiss
}

func (s *stalledStore) Put(context.Context, *kcache.Key, kcache.Entry) error {
	s.once.Do(func() { close(s.entered) })
	<-s.unblock
	return nil
}

func (s *stalledStore) Delete(context.Context, *kcache.Key) error { return nil }

// TestWaiterLeavesWhileEvictedProgramCommits reproduces, with the real
// runtime, a waiter kept past its context: a build whose insert evicts
// another program runs that program's release hook, which commits its
// binary to the tiers (a disk Put, possibly an eviction pass), before the
// build's waiters wake. A waiter whose context ends meanwhile must return
// at once, not when the Put is done.
func TestWaiterLeavesWhileEvictedProgramCommits(t *testing.T) {
	f := testFixture(t)
	ctx, err := NewContext(f.dev)
	if err != nil {
		t.Fatal(err)
	}
	cfg := kcache.DefaultConfig(func(string) string { return "" })
	// Room for one program but not two: the second insert evicts the first.
	cfg.InMemoryThreshold = programSize(t, ctx, f.dev) * 3 / 2
	store := &stalledStore{entered: make(chan struct{}), unblock: make(chan struct{})}
	bins := kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: store})
	// Commits wait for the program's release, which eviction brings.
	c := NewCache(ctx, bins, CacheOptions{CommitDelay: time.Hour, Environ: []string{}})
	defer func() {
		c.Close()
		ctx.Release()
	}()
	defer close(store.unblock) // first deferred, last run: before Close

	first, err := c.Program(context.Background(), f.dev, Source{Code: []byte(testSource), Options: "-DFIRST"})
	if err != nil {
		t.Fatal(err)
	}
	first.Release()

	waiter, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		p, err := c.Program(waiter, f.dev, Source{Code: []byte(testSource), Options: "-DSECOND"})
		if err == nil {
			p.Release()
		}
		done <- err
	}()
	select {
	case <-store.entered: // the second build is in, and the first program's commit blocks
	case <-time.After(leaveGuard):
		t.Fatal("the second program's insert did not evict the first")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter got %v, want context.Canceled", err)
		}
	case <-time.After(leaveGuard):
		t.Fatal("a waiter whose context ended still waits for an evicted program's commit")
	}
}

// programSize returns the bytes a program built from testSource counts
// toward the in-memory threshold.
func programSize(t *testing.T, ctx *Context, dev Device) int64 {
	t.Helper()
	c := NewCache(ctx, kcache.New(kcache.Config{InMemory: true}, nil), CacheOptions{CommitDelay: -1, Environ: []string{}})
	defer c.Close()
	p, err := c.Program(context.Background(), dev, Source{Code: []byte(testSource), Options: "-DSIZE"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	return p.h.Value().size
}
