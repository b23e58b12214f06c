package kcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// orderedLocker records, in a log shared by several stores, when its lock
// is taken and released; onLock runs while the lock is being taken, as
// another process's build would.
type orderedLocker struct {
	*mapStore
	name   string
	mu     *sync.Mutex
	log    *[]string
	onLock func()
}

func (s *orderedLocker) Lock(context.Context, *Key) (func(), error) {
	s.mu.Lock()
	*s.log = append(*s.log, "lock "+s.name)
	s.mu.Unlock()
	if s.onLock != nil {
		s.onLock()
	}
	return func() {
		s.mu.Lock()
		*s.log = append(*s.log, "unlock "+s.name)
		s.mu.Unlock()
	}, nil
}

func twoLockers() (disk, remote *orderedLocker, log *[]string) {
	var mu sync.Mutex
	log = new([]string)
	disk = &orderedLocker{mapStore: newMapStore(), name: "disk", mu: &mu, log: log}
	remote = &orderedLocker{mapStore: newMapStore(), name: "remote", mu: &mu, log: log}
	return disk, remote, log
}

// TestEveryLockerTaken: a miss takes the machine's lock, then the fleet's,
// and a build releases them in the reverse order.
func TestEveryLockerTaken(t *testing.T) {
	disk, remote, log := twoLockers()
	c := New(Config{}, nil, Tier{OutcomeDisk, disk}, Tier{OutcomeRemote, remote})
	r, err := c.GetOrBuild(context.Background(), keyN(1), func(context.Context) ([]byte, error) { return []byte("bin"), nil })
	if err != nil || r.Outcome != OutcomeBuilt {
		t.Fatalf("%+v %v", r, err)
	}
	want := "[lock disk lock remote unlock remote unlock disk]"
	if got := fmt.Sprint(*log); got != want {
		t.Errorf("locks %s, want %s", got, want)
	}
}

// TestWaitedForAnotherMachine: while this process waits for the fleet's
// lease, another machine builds the key; this process then reads it from
// the remote tier, fills its disk, and builds nothing.
func TestWaitedForAnotherMachine(t *testing.T) {
	disk, remote, log := twoLockers()
	remote.onLock = func() { remote.entries[keyN(1).Digest()] = Entry{Binary: []byte("theirs")} }
	c := New(Config{}, nil, Tier{OutcomeDisk, disk}, Tier{OutcomeRemote, remote})
	r, err := c.GetOrBuild(context.Background(), keyN(1), func(context.Context) ([]byte, error) {
		t.Error("built although another machine had")
		return nil, nil
	})
	if err != nil || r.Outcome != OutcomeWaited || string(r.Binary) != "theirs" {
		t.Fatalf("got %+v %v", r, err)
	}
	if s := c.Stats(); s.Waited != 1 || s.Remote.Waited != 1 || s.Disk.Waited != 0 || s.Remote.Hits != 1 {
		t.Errorf("stats %+v", s)
	}
	if _, ok := disk.entries[keyN(1).Digest()]; !ok {
		t.Error("the remote hit did not fill the disk tier")
	}
	if got, want := fmt.Sprint(*log), "[lock disk lock remote unlock remote unlock disk]"; got != want {
		t.Errorf("locks %s, want %s", got, want)
	}
}

// TestMachineLockServesBeforeFleetLease: an entry another process of the
// machine built while this one waited for the disk lock is used without
// asking for the fleet's lease.
func TestMachineLockServesBeforeFleetLease(t *testing.T) {
	disk, remote, log := twoLockers()
	disk.onLock = func() { disk.entries[keyN(1).Digest()] = Entry{Binary: []byte("neighbour's")} }
	c := New(Config{}, nil, Tier{OutcomeDisk, disk}, Tier{OutcomeRemote, remote})
	r, err := c.GetOrBuild(context.Background(), keyN(1), nil)
	if err != nil || r.Outcome != OutcomeWaited {
		t.Fatalf("got %+v %v", r, err)
	}
	if got, want := fmt.Sprint(*log), "[lock disk unlock disk]"; got != want {
		t.Errorf("locks %s, want %s", got, want)
	}
	if s := c.Stats(); s.Disk.Waited != 1 || s.Remote.Waited != 0 {
		t.Errorf("stats %+v", s)
	}
}

// closingStore records Close calls.
type closingStore struct {
	*mapStore
	closed int
	err    error
}

func (s *closingStore) Close(context.Context) error { s.closed++; return s.err }

func TestCloseClosesTiers(t *testing.T) {
	a, b := &closingStore{mapStore: newMapStore()}, &closingStore{mapStore: newMapStore(), err: errors.New("queue not flushed")}
	c := New(Config{}, nil, Tier{OutcomeDisk, a}, Tier{OutcomeDisk, newMapStore()}, Tier{OutcomeRemote, b})
	err := c.Close(context.Background())
	if a.closed != 1 || b.closed != 1 || err == nil || !errors.Is(err, b.err) {
		t.Errorf("closed %d, %d; err %v", a.closed, b.closed, err)
	}
}

// reportingStore counts failures of its own.
type reportingStore struct{ *mapStore }

func (reportingStore) TierStats() TierStats { return TierStats{Errors: 2, Timeouts: 1} }

// TestTierCounters: rejected entries and timeouts are counted apart, and a
// store's own counts are added to its tier's.
func TestTierCounters(t *testing.T) {
	rejecting, slow := newMapStore(), newMapStore()
	rejecting.fail = fmt.Errorf("bad signature: %w", ErrRejected)
	slow.fail = fmt.Errorf("no answer: %w", context.DeadlineExceeded)
	c := New(Config{}, nil, Tier{OutcomeDisk, rejecting}, Tier{OutcomeRemote, reportingStore{slow}})
	if _, err := c.Get(context.Background(), keyN(1)); !errors.Is(err, ErrMiss) {
		t.Fatal(err)
	}
	s := c.Stats()
	if s.Disk.Rejected != 1 || s.Disk.Errors != 0 || s.Disk.Misses != 1 {
		t.Errorf("disk %+v: want one rejected miss, no error", s.Disk)
	}
	if s.Remote.Timeouts != 1+1 || s.Remote.Errors != 1+2 || s.Remote.Misses != 1 {
		t.Errorf("remote %+v: want one timeout of the cache's and the store's own counts", s.Remote)
	}
	if !errors.Is(ErrRejected, ErrMiss) {
		t.Error("a rejected entry must be a miss")
	}
}
