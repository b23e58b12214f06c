package kcache

import (
	"context"
	"sync"
	"testing"
	"time"
)

// mergingStore is a Store over a map that keeps what MergeStats hands it.
type mergingStore struct {
	mu      sync.Mutex
	entries map[Digest]Entry
	merged  []Stats
}

func (m *mergingStore) Get(_ context.Context, k *Key) (Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[k.Digest()]; ok {
		return e, nil
	}
	return Entry{}, ErrMiss
}

func (m *mergingStore) Put(_ context.Context, k *Key, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries[k.Digest()] = e
	return nil
}

func (m *mergingStore) Delete(_ context.Context, k *Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, k.Digest())
	return nil
}

func (m *mergingStore) MergeStats(_ context.Context, d Stats) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.merged = append(m.merged, d)
	return nil
}

func (m *mergingStore) merges() []Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Stats(nil), m.merged...)
}

// TestFlushStats checks that hits merge nothing, that a build merges once
// the interval has passed, and that each merge hands on only new counts.
func TestFlushStats(t *testing.T) {
	ctx := context.Background()
	st := &mergingStore{entries: map[Digest]Entry{}}
	c := New(Config{}, nil, Tier{Kind: OutcomeDisk, Store: st})
	build := func(context.Context) ([]byte, error) { return []byte("bin"), nil }
	key := func(i int) *Key { return &Key{Image: Image{Source: []byte{byte(i)}}} }

	c.GetOrBuild(ctx, key(1), build) // starts the interval
	for range 5 {
		c.GetOrBuild(ctx, key(1), build)
	}
	if m := st.merges(); len(m) != 0 {
		t.Fatalf("merged %v before the interval passed", m)
	}
	old := flushInterval
	flushInterval = time.Nanosecond
	defer func() { flushInterval = old }()
	c.GetOrBuild(ctx, key(2), build) // a build after the interval: merges
	m := st.merges()
	if len(m) != 1 || m[0].Builds != 2 || m[0].Disk.Hits != 5 {
		t.Fatalf("merges %+v; want one with 2 builds and 5 hits", m)
	}
	c.GetOrBuild(ctx, key(2), build)
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m = st.merges()
	if len(m) != 2 || m[1].Builds != 0 || m[1].Disk.Hits != 1 {
		t.Errorf("Close merged %+v; want only the hit since the last merge", m[len(m)-1])
	}
	if err := c.Close(ctx); err != nil || len(st.merges()) != 2 {
		t.Errorf("a second Close merged again: %v", st.merges())
	}
}
