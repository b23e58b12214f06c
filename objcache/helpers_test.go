package objcache

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// object stands for a runtime object: freed records the release hook's
// runs, so that tests can check it ran once, and only once no one held it.
type object struct {
	name  string
	freed atomic.Int32
	// unkept makes the object say it must not be kept (Keeper).
	unkept bool
}

func (o *object) Keep() bool { return !o.unkept }

// tracker is a release hook that records what it freed, in order.
type tracker struct {
	mu    sync.Mutex
	freed []string // protected by mu
}

func (tr *tracker) release(o *object) {
	if o.freed.Add(1) != 1 {
		panic("object " + o.name + " released twice")
	}
	tr.mu.Lock()
	tr.freed = append(tr.freed, o.name)
	tr.mu.Unlock()
}

func (tr *tracker) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.freed...)
}

// builder returns a build func for an object named name of size bytes.
func builder(name string, size int64) BuildFunc[*object] {
	return func(context.Context) (*object, int64, error) {
		return &object{name: name}, size, nil
	}
}

// mustGet is GetOrBuild for tests that expect success, on the test's
// goroutine.
func mustGet[K comparable, V any](t testing.TB, c *Cache[K, V], key K, build BuildFunc[V]) *Handle[V] {
	t.Helper()
	h, err := c.GetOrBuild(context.Background(), key, build)
	if err != nil {
		t.Fatalf("GetOrBuild(%v): %v", key, err)
	}
	return h
}

// awaitWaiters blocks until n callers wait on key's build. It polls, but
// asserts nothing about time: it only orders the test's steps.
func awaitWaiters[K comparable, V any](c *Cache[K, V], key K, n int) {
	for {
		c.mu.Lock()
		e := c.idx.Load().lookup(key)
		got := 0
		if e != nil {
			got = e.waiters
		}
		c.mu.Unlock()
		if got >= n {
			return
		}
		runtime.Gosched()
	}
}

// inIndex reports whether key has an entry, finished or not.
func inIndex[K comparable, V any](c *Cache[K, V], key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idx.Load().lookup(key) != nil
}
