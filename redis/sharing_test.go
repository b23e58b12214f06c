package redis

import (
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
	goredis "github.com/redis/go-redis/v9"
)

const fleetSecret = "the fleet's secret"

// valueNames returns the names of the values stored on the server.
func valueNames(t *testing.T, rc *goredis.Client) []string {
	t.Helper()
	keys, err := rc.Keys(bg, "kcache:*:v").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// signedRounds runs rounds of members signed machines, each round with
// fresh disks, on one key, and returns the builds of each round and the
// remote rejections counted.
func signedRounds(t *testing.T, url string, rounds, members int) (builds []int64, rejected int64) {
	t.Helper()
	t.Setenv(kcache.EnvRemoteSecret, fleetSecret)
	for range rounds {
		var n int64
		for _, r := range fleet(t, url, members, 1, 100*time.Millisecond, 0, 4096) {
			n += r.Builds
			rejected += r.Stats.Remote.Rejected
		}
		builds = append(builds, n)
	}
	return builds, rejected
}

// TestUnsignedNodeCannotSwitchOffSharing: a node without the secret builds
// a key first. Before, its value sat under the name the signed fleet uses;
// every signed machine rejected it, none could replace it (SET NX), and the
// fleet built the key on every machine, for good. Now the signed fleet's
// names are its own: it builds the key once.
func TestUnsignedNodeCannotSwitchOffSharing(t *testing.T) {
	srv := startServer(t)
	key := testKey(0)
	u := newNode(t, srv.url(), "", Options{})
	if _, err := u.cache.GetOrBuild(bg, key, (&builder{size: 4096}).build(key)); err != nil {
		t.Fatal(err)
	}
	u.close(t)
	builds, rejected := signedRounds(t, srv.url(), 4, 4)
	t.Logf("builds per round %v, %d rejected", builds, rejected)
	if total := sum(builds); total != 1 {
		t.Errorf("4 rounds of 4 signed machines built the key %d times (%v), want once", total, builds)
	}
}

// TestForgedValueRemoved: someone who can write to Redis replaces the
// signed fleet's value with a forgery. The first machine that rejects it
// removes it (compare-and-delete), one machine builds, and the rounds
// after hit; the rejections are counted.
func TestForgedValueRemoved(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	key := testKey(0)
	w := newNode(t, srv.url(), "", Options{Secret: []byte(fleetSecret)})
	if _, err := w.cache.GetOrBuild(bg, key, (&builder{size: 4096}).build(key)); err != nil {
		t.Fatal(err)
	}
	w.close(t)
	vks := valueNames(t, rc)
	if len(vks) != 1 {
		t.Fatalf("values %q, want one", vks)
	}
	v, _ := rc.Get(bg, vks[0]).Bytes()
	v[len(v)-1] ^= 1 // the MAC no longer matches
	rc.Set(bg, vks[0], v, time.Hour)

	builds, rejected := signedRounds(t, srv.url(), 4, 4)
	t.Logf("builds per round %v, %d rejected", builds, rejected)
	if total := sum(builds); total != 1 {
		t.Errorf("4 rounds of 4 signed machines built the key %d times (%v), want once", total, builds)
	}
	if rejected == 0 {
		t.Errorf("the forgery's rejection was not counted")
	}
	if now, _ := rc.Get(bg, vks[0]).Bytes(); string(now) == string(v) {
		t.Errorf("the forgery is still there")
	}
}

// TestRejectedValueNotRenewed: a hit renews an entry's expiry only once
// the value verified. Before, GETEX renewed whatever was stored, so a value
// every machine rejected never expired either.
func TestRejectedValueNotRenewed(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	key := testKey(0)
	opts := Options{Secret: []byte(fleetSecret), TTL: time.Hour, ReadOnly: false}
	w := newNode(t, srv.url(), "", opts)
	if _, err := w.cache.GetOrBuild(bg, key, (&builder{size: 4096}).build(key)); err != nil {
		t.Fatal(err)
	}
	w.close(t)
	vks := valueNames(t, rc)
	if len(vks) != 1 {
		t.Fatalf("values %q, want one", vks)
	}
	v, _ := rc.Get(bg, vks[0]).Bytes()
	v[len(v)-1] ^= 1
	rc.Set(bg, vks[0], v, time.Minute)

	r := newNode(t, srv.url(), "", opts)
	if _, err := r.remote.Get(bg, key); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("Get = %v, want a rejected signature", err)
	}
	r.close(t)
	if ttl := rc.PTTL(bg, vks[0]).Val(); ttl > time.Minute {
		t.Errorf("the rejected value's TTL went from a minute to %v", ttl)
	}
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// TestFailedBuildNoConvoy: five machines miss one key whose build fails
// after a second. Before, each released lease went to the next waiter, which
// built in turn, one build after another. Now the failed holder leaves a
// short-lived marker, and every waiter builds at once: their builds
// overlap, which the members' runs record (an order, not a measure of
// time, so a loaded machine cannot fail it).
func TestFailedBuildNoConvoy(t *testing.T) {
	srv := startServer(t)
	t.Setenv(envFail, "1")
	t.Setenv(envRuns, tempDir(t, "runs"))
	overlap, builds := 0, int64(0)
	for _, r := range fleet(t, srv.url(), 5, 1, time.Second, 0, 4096) {
		overlap = max(overlap, r.Overlap)
		builds += r.Builds
	}
	t.Logf("%d builds; at most %d others running when one began", builds, overlap)
	if overlap == 0 {
		t.Errorf("the machines' builds ran one after another: each waited on the lease for the one before")
	}
}
