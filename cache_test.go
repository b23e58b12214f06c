package kcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// mapStore is a Store over a map: a user-supplied store as onednn's blob API
// imagines one. fail, when set, makes every call fail as a broken disk would.
type mapStore struct {
	mu      sync.Mutex
	entries map[Digest]Entry
	fail    error
	puts    int
}

func newMapStore() *mapStore { return &mapStore{entries: map[Digest]Entry{}} }

func (s *mapStore) Get(_ context.Context, k *Key) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return Entry{}, s.fail
	}
	e, ok := s.entries[k.Digest()]
	if !ok {
		return Entry{}, ErrMiss
	}
	return e, nil
}

func (s *mapStore) Put(_ context.Context, k *Key, e Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.puts++
	s.entries[k.Digest()] = e
	return nil
}

func (s *mapStore) Delete(_ context.Context, k *Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, k.Digest())
	return nil
}

func keyN(n int) *Key {
	return &Key{Image: Image{Format: "opencl-c", Source: fmt.Appendf(nil, "kernel %d", n)}}
}

func TestGetOrBuildTiers(t *testing.T) {
	ctx := context.Background()
	disk, remote := newMapStore(), newMapStore()
	c := New(Config{}, nil, Tier{OutcomeDisk, disk}, Tier{OutcomeRemote, remote})
	build := func(context.Context) ([]byte, error) { return []byte("bin"), nil }

	r, err := c.GetOrBuild(ctx, keyN(1), build)
	if err != nil || r.Outcome != OutcomeBuilt || string(r.Binary) != "bin" {
		t.Fatalf("first call: %+v, %v", r, err)
	}
	if disk.puts != 1 || remote.puts != 1 {
		t.Errorf("build stored in %d/%d tiers", disk.puts, remote.puts)
	}
	if r, _ := c.GetOrBuild(ctx, keyN(1), build); r.Outcome != OutcomeDisk {
		t.Errorf("second call outcome %v, want disk", r.Outcome)
	}
	// A hit in the remote tier fills the disk tier above it.
	delete(disk.entries, keyN(1).Digest())
	if r, _ := c.GetOrBuild(ctx, keyN(1), build); r.Outcome != OutcomeRemote {
		t.Errorf("outcome %v, want remote", r.Outcome)
	}
	if _, ok := disk.entries[keyN(1).Digest()]; !ok {
		t.Error("remote hit did not fill the disk tier")
	}
	s := c.Stats()
	if s.Builds != 1 || s.Disk.Hits != 1 || s.Disk.Misses != 2 || s.Remote.Hits != 1 || s.Remote.Misses != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestSingleFlight(t *testing.T) {
	c := New(Config{}, nil, Tier{OutcomeDisk, newMapStore()})
	var builds atomic.Int32
	release := make(chan struct{})
	build := func(context.Context) ([]byte, error) {
		builds.Add(1)
		<-release
		return []byte("bin"), nil
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			r, err := c.GetOrBuild(context.Background(), keyN(1), build)
			if err != nil || string(r.Binary) != "bin" {
				t.Errorf("got %+v, %v", r, err)
			}
		})
	}
	time.Sleep(20 * time.Millisecond) // let the goroutines pile up on the build
	close(release)
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("%d builds, want 1", n)
	}
}

func TestWaiterCancelDoesNotStopBuild(t *testing.T) {
	store := newMapStore()
	c := New(Config{}, nil, Tier{OutcomeDisk, store})
	started, release := make(chan struct{}), make(chan struct{})
	var buildCtxErr atomic.Value
	build := func(ctx context.Context) ([]byte, error) {
		close(started)
		<-release
		buildCtxErr.Store(fmt.Sprint(ctx.Err()))
		return []byte("bin"), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { _, err := c.GetOrBuild(ctx, keyN(1), build); errc <- err }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter got %v", err)
	}
	close(release)
	r, err := c.GetOrBuild(context.Background(), keyN(1), build)
	if err != nil || string(r.Binary) != "bin" {
		t.Fatalf("after cancel: %+v %v", r, err)
	}
	if got := buildCtxErr.Load(); got != "<nil>" {
		t.Errorf("build saw ctx error %v", got)
	}
}

func TestBuildErrorIsReturnedNotStored(t *testing.T) {
	store := newMapStore()
	c := New(Config{}, nil, Tier{OutcomeDisk, store})
	boom := errors.New("syntax error")
	_, err := c.GetOrBuild(context.Background(), keyN(1), func(context.Context) ([]byte, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if store.puts != 0 || c.Stats().FailedBuilds != 1 {
		t.Errorf("failed build stored or uncounted: puts=%d stats=%+v", store.puts, c.Stats())
	}
}

// TestBrokenTierNeverFailsBuild checks the failure rule: a tier that errs
// is a warning and a miss, and the build goes on.
func TestBrokenTierNeverFailsBuild(t *testing.T) {
	store := newMapStore()
	store.fail = errors.New("read-only file system")
	var logs bytes.Buffer
	c := New(Config{}, testLogger(&logs), Tier{OutcomeDisk, store})
	for i := range 3 {
		r, err := c.GetOrBuild(context.Background(), keyN(i), func(context.Context) ([]byte, error) { return []byte("b"), nil })
		if err != nil || r.Outcome != OutcomeBuilt {
			t.Fatalf("build through a broken tier: %+v %v", r, err)
		}
	}
	if n := bytes.Count(logs.Bytes(), []byte("level=WARN")); n != 2 {
		t.Errorf("%d warnings, want one for get and one for put:\n%s", n, logs.String())
	}
	if s := c.Stats(); s.Disk.Errors != 6 {
		t.Errorf("disk errors %d, want 6", s.Disk.Errors)
	}
}

// lockingStore simulates another process that builds the key while holding
// the lock: Lock returns only after that build landed in the store.
type lockingStore struct {
	*mapStore
	otherProcess func()
}

func (s *lockingStore) Lock(context.Context, *Key) (func(), error) {
	s.otherProcess()
	return func() {}, nil
}

func TestWaitedForAnotherProcess(t *testing.T) {
	store := &lockingStore{mapStore: newMapStore()}
	store.otherProcess = func() { store.entries[keyN(1).Digest()] = Entry{Binary: []byte("theirs")} }
	c := New(Config{}, nil, Tier{OutcomeDisk, store})
	r, err := c.GetOrBuild(context.Background(), keyN(1), func(context.Context) ([]byte, error) {
		t.Error("built although another process had")
		return nil, nil
	})
	if err != nil || r.Outcome != OutcomeWaited || string(r.Binary) != "theirs" {
		t.Fatalf("got %+v %v", r, err)
	}
	if s := c.Stats(); s.Waited != 1 || s.Disk.Misses != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestNoTiersStillBuilds(t *testing.T) {
	c := New(Config{}, nil)
	r, err := c.GetOrBuild(context.Background(), keyN(1), func(context.Context) ([]byte, error) { return []byte("x"), nil })
	if err != nil || r.Outcome != OutcomeBuilt {
		t.Fatal(r, err)
	}
	if _, err := c.Get(context.Background(), keyN(1)); !errors.Is(err, ErrMiss) {
		t.Errorf("Get = %v, want miss", err)
	}
}

func TestSavedTime(t *testing.T) {
	store := newMapStore()
	store.entries[keyN(1).Digest()] = Entry{Binary: []byte("x"), BuildTime: time.Hour}
	c := New(Config{}, nil, Tier{OutcomeDisk, store})
	if _, err := c.Get(context.Background(), keyN(1)); err != nil {
		t.Fatal(err)
	}
	c.RecordMemory(true, time.Minute)
	c.RecordMemory(false, 0)
	s := c.Stats()
	if s.SavedTime < time.Hour || s.SavedTime > time.Hour+time.Minute || s.Memory.Hits != 1 || s.Memory.Misses != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestOutcomeStrings(t *testing.T) {
	want := map[Outcome]string{OutcomeBuilt: "built", OutcomeWaited: "waited", OutcomeRemote: "remote", OutcomeDisk: "disk", OutcomeMemory: "memory"}
	for o, s := range want {
		if o.String() != s {
			t.Errorf("%d: %q", o, o.String())
		}
		if b, _ := o.MarshalText(); string(b) != s {
			t.Errorf("MarshalText %q", b)
		}
	}
}

func TestDeleteRemovesFromEveryTier(t *testing.T) {
	a, b := newMapStore(), newMapStore()
	c := New(Config{}, nil, Tier{OutcomeDisk, a}, Tier{OutcomeRemote, b})
	if err := c.Put(context.Background(), keyN(1), Entry{Binary: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), keyN(1)); err != nil {
		t.Fatal(err)
	}
	if len(a.entries)+len(b.entries) != 0 {
		t.Error("entry left behind")
	}
}

// countingLocker records lock and unlock calls, to check that a Pending
// holds the build lock until it is committed or aborted.
type countingLocker struct {
	*mapStore
	locked, unlocked atomic.Int32
}

func (s *countingLocker) Lock(context.Context, *Key) (func(), error) {
	s.locked.Add(1)
	return func() { s.unlocked.Add(1) }, nil
}

func TestLookupCommitAndAbort(t *testing.T) {
	ctx := context.Background()
	store := &countingLocker{mapStore: newMapStore()}
	c := New(Config{}, nil, Tier{OutcomeDisk, store})

	_, p, err := c.Lookup(ctx, keyN(1))
	if err != nil || p == nil {
		t.Fatalf("miss: pending %v, err %v", p, err)
	}
	if store.locked.Load() != 1 || store.unlocked.Load() != 0 {
		t.Fatal("a pending build must hold the lock")
	}
	p.Commit(ctx, []byte("late binary"), time.Second)
	p.Commit(ctx, []byte("again"), time.Second) // ignored
	p.Abort(errors.New("ignored"))
	if store.unlocked.Load() != 1 || store.puts != 1 {
		t.Fatalf("unlocked %d, puts %d; want 1, 1", store.unlocked.Load(), store.puts)
	}
	r, p2, err := c.Lookup(ctx, keyN(1))
	if err != nil || p2 != nil || string(r.Binary) != "late binary" || r.BuildTime != time.Second {
		t.Fatalf("after commit: %+v %v %v", r, p2, err)
	}

	_, p3, _ := c.Lookup(ctx, keyN(2))
	p3.Abort(errors.New("compile error"))
	if _, err := c.Get(ctx, keyN(2)); !errors.Is(err, ErrMiss) {
		t.Error("an aborted build stored something")
	}
	if s := c.Stats(); s.Builds != 1 || s.FailedBuilds != 1 || store.unlocked.Load() != 2 {
		t.Errorf("stats %+v, unlocked %d", s, store.unlocked.Load())
	}
}
