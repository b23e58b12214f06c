package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// TestForeignTypesUnderNames: keys under the tier's names that are no
// string (another program's, or a fleet member writing Redis by hand).
// Each is a rejected value, removed, and the key is then stored and
// shared as any other; a lease that is no string is replaced. Before,
// GET's WRONGTYPE was a server failure: the key was never stored (writes
// never replace a value), five lookups in a row switched the tier off,
// and a foreign lease failed every acquire for good.
func TestForeignTypesUnderNames(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	const keys = 8
	for i := range keys {
		rc.HSet(bg, unsigned.value(testKey(i).Digest()), "f", "v")
		rc.RPush(bg, unsigned.value(testKey(100+i).Digest()), "x")
	}
	rc.RPush(bg, unsigned.lease(testKey(50).Digest()), "held")

	// A reader that only looks (as a read-only client does, with no
	// lease between its lookups) does not take the answers for failures.
	ro, err := Open(Options{URL: srv.url(), ReadOnly: true, Backoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close(bg)
	for i := range keys {
		if _, err := ro.Get(bg, testKey(100+i)); !errors.Is(err, kcache.ErrRejected) {
			t.Fatalf("a list under key %d's name: %v; want a rejected value", 100+i, err)
		}
	}

	b := &builder{size: 3000}
	n := newNode(t, srv.url(), "", Options{Backoff: time.Hour})
	for i := range keys {
		if r, err := n.cache.GetOrBuild(bg, testKey(i), b.build(testKey(i))); err != nil || r.Outcome != kcache.OutcomeBuilt {
			t.Fatalf("key %d: %v, %v", i, r.Outcome, err)
		}
	}
	if s := n.cache.Stats().Remote; s.Rejected == 0 || s.Errors != 0 {
		t.Errorf("remote stats %+v: want rejections, no errors", s)
	}
	unlock, err := n.remote.Lock(bg, testKey(50))
	if err != nil {
		t.Errorf("lease under a list: %v; want it replaced and held", err)
	}
	unlock()
	flush(t, n)

	m := newNode(t, srv.url(), "", Options{})
	for i := range keys {
		r, err := m.cache.Get(bg, testKey(i))
		if err != nil || r.Outcome != kcache.OutcomeRemote || string(r.Binary) != string(binaryOf(testKey(i), b.size)) {
			t.Fatalf("key %d on another machine: %v, %v; want the stored value", i, r.Outcome, err)
		}
	}
	if _, err := ro.Get(bg, testKey(0)); err != nil {
		t.Errorf("the read-only reader after its rejections: %v; want a hit", err)
	}
}

// TestForeignLeases: leases no kcache client writes, set by a fleet member
// writing Redis by hand (or a member that died long ago on a server that
// lost the expiry): a token with no expiry, the failure marker with none
// or one longer than kcache sets. Each is replaced by the next machine
// that asks, which builds under its own lease. Before, the first made
// every machine wait KCACHE_BUILD_WAIT on every miss of the key, and the
// others made every process of every machine build it, for good.
func TestForeignLeases(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	for i, l := range []struct {
		value string
		ttl   time.Duration
	}{
		{"0123456789abcdef0123456789abcdef", 0},
		{failedMarker, 0},
		{failedMarker, time.Hour},
		{unstoredMarker, time.Hour},
	} {
		rc.Set(bg, unsigned.lease(testKey(i).Digest()), l.value, l.ttl)
	}
	s, err := Open(Options{URL: srv.url(), BuildWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(bg)
	for i := range 4 {
		ctx, cancel := context.WithTimeout(bg, 5*time.Second) // a bound, not a measure
		unlock, err := s.Lock(ctx, testKey(i))
		cancel()
		if err != nil {
			t.Errorf("lease %d: %v; want it replaced and held", i, err)
			continue
		}
		if ttl := rc.PTTL(bg, unsigned.lease(testKey(i).Digest())).Val(); ttl <= 0 || ttl > DefaultLeaseTTL {
			t.Errorf("lease %d expires in %v; want a lease of this store's", i, ttl)
		}
		unlock()
	}
	// kcache's own marker stays what it says.
	rc.Set(bg, unsigned.lease(testKey(9).Digest()), failedMarker, failedTTL)
	if _, err := s.Lock(bg, testKey(9)); !errors.Is(err, kcache.ErrLastBuildFailed) {
		t.Errorf("a failed build's marker: %v; want ErrLastBuildFailed", err)
	}
}
