package redis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

var bg = context.Background()

// TestTwoNodes: two machines with their own disks share one Redis; what
// the first builds, the second reads from the remote tier, and keeps on
// its disk.
func TestTwoNodes(t *testing.T) {
	srv := startServer(t)
	b := &builder{size: 100 << 10}
	a := newNode(t, srv.url(), tempDir(t, "a"), Options{})
	for i := range 5 {
		r, err := a.cache.GetOrBuild(bg, testKey(i), b.build(testKey(i)))
		if err != nil || r.Outcome != kcache.OutcomeBuilt {
			t.Fatalf("node a, key %d: %v, %v", i, r.Outcome, err)
		}
	}
	a.close(t) // flushes the queued writes

	dirB := tempDir(t, "b")
	nb := newNode(t, srv.url(), dirB, Options{})
	for i := range 5 {
		r, err := nb.cache.GetOrBuild(bg, testKey(i), b.build(testKey(i)))
		if err != nil || r.Outcome != kcache.OutcomeRemote {
			t.Fatalf("node b, key %d: %v, %v; want a remote hit", i, r.Outcome, err)
		}
		if string(r.Binary) != string(binaryOf(testKey(i), b.size)) {
			t.Fatalf("node b, key %d: wrong binary", i)
		}
	}
	if got := b.runs.Load(); got != 5 {
		t.Errorf("%d builds, want 5", got)
	}
	if s := nb.cache.Stats(); s.Remote.Hits != 5 || s.Disk.Misses != 5 {
		t.Errorf("node b stats %+v", s)
	}
	// The remote hit filled node b's disk: a node without the remote tier
	// finds it there.
	again := newNode(t, "redis://127.0.0.1:1", dirB, Options{})
	r, err := again.cache.Get(bg, testKey(3))
	if err != nil || r.Outcome != kcache.OutcomeDisk {
		t.Errorf("node b's disk: %v, %v; want a disk hit", r.Outcome, err)
	}
}

// TestRejectedAndRebuilt: a tampered value is rejected, counted, removed
// and rebuilt, and the rebuild's value takes its place. Values of an
// unsigned writer and of one with another secret live under other names:
// the reader does not see them, builds, and leaves them alone.
func TestRejectedAndRebuilt(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	secret := []byte("the fleet's secret")
	for i, tc := range []struct {
		name   string
		writer Options
		tamper bool
	}{
		{"tampered", Options{Secret: secret}, true},
		{"unsigned", Options{}, false},
		{"other secret", Options{Secret: []byte("another secret")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := testKey(100 + i)
			w := newNode(t, srv.url(), "", tc.writer)
			if _, err := w.cache.GetOrBuild(bg, key, (&builder{size: 5000}).build(key)); err != nil {
				t.Fatal(err)
			}
			w.close(t)
			vk := namesFor(tc.writer.Secret).value(key.Digest())
			if tc.tamper {
				v, err := rc.Get(bg, vk).Bytes()
				if err != nil {
					t.Fatal(err)
				}
				v[len(v)/2] ^= 0x40
				rc.Set(bg, vk, v, 0)
			}
			stored, _ := rc.Get(bg, vk).Bytes()

			logs := &logBuffer{}
			b := &builder{size: 5000}
			r := newNode(t, srv.url(), "", Options{Secret: secret, Logger: logs.logger()})
			res, err := r.cache.GetOrBuild(bg, key, b.build(key))
			if err != nil || res.Outcome != kcache.OutcomeBuilt || b.runs.Load() != 1 {
				t.Fatalf("GetOrBuild = %v, %v after %d builds; want one build", res.Outcome, err, b.runs.Load())
			}
			r.close(t)
			wantRejected := int64(0)
			if tc.tamper {
				wantRejected = 1
			}
			if s := r.cache.Stats(); s.Remote.Rejected != wantRejected {
				t.Errorf("remote stats %+v, want %d rejected", s.Remote, wantRejected)
			}
			if tc.tamper != strings.Contains(logs.String(), "remote entry rejected") {
				t.Errorf("logs: %q", logs.String())
			}
			now, _ := rc.Get(bg, vk).Bytes()
			if tc.tamper == (string(now) == string(stored)) {
				t.Errorf("value changed: %v; want it replaced only if tampered", string(now) != string(stored))
			}
			if tc.tamper {
				c := newNode(t, srv.url(), "", Options{Secret: secret})
				if res, err := c.cache.GetOrBuild(bg, key, nil); err != nil || res.Outcome != kcache.OutcomeRemote {
					t.Errorf("after the rebuild: %v, %v; want a remote hit", res.Outcome, err)
				}
			}
		})
	}
}

// TestReadOnly: a read-only client reads, never writes, and takes no
// lease.
func TestReadOnly(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	w := newNode(t, srv.url(), "", Options{})
	if _, err := w.cache.GetOrBuild(bg, testKey(1), (&builder{size: 10}).build(testKey(1))); err != nil {
		t.Fatal(err)
	}
	w.close(t)

	ro := newNode(t, srv.url(), "", Options{ReadOnly: true})
	if r, err := ro.cache.GetOrBuild(bg, testKey(1), nil); err != nil || r.Outcome != kcache.OutcomeRemote {
		t.Fatalf("read-only hit: %v, %v", r.Outcome, err)
	}
	if _, err := ro.cache.GetOrBuild(bg, testKey(2), (&builder{size: 10}).build(testKey(2))); err != nil {
		t.Fatal(err)
	}
	if err := ro.cache.Delete(bg, testKey(1)); err != nil {
		t.Fatal(err)
	}
	ro.close(t)
	keys, err := rc.Keys(bg, "*").Result()
	if err != nil || len(keys) != 1 || keys[0] != unsigned.value(testKey(1).Digest()) {
		t.Errorf("keys after the read-only client: %q, %v; want only key 1's value", keys, err)
	}
}

// TestTTL: entries expire after KCACHE_REMOTE_TTL, and a hit renews it.
func TestTTL(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	n := newNode(t, srv.url(), "", Options{TTL: time.Hour})
	key := testKey(1)
	if _, err := n.cache.GetOrBuild(bg, key, (&builder{size: 10}).build(key)); err != nil {
		t.Fatal(err)
	}
	n.close(t)
	vk := unsigned.value(key.Digest())
	if ttl := rc.PTTL(bg, vk).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("TTL after a write = %v, want up to an hour", ttl)
	}
	rc.PExpire(bg, vk, time.Minute)
	n2 := newNode(t, srv.url(), "", Options{TTL: time.Hour})
	if _, err := n2.cache.Get(bg, key); err != nil {
		t.Fatal(err)
	}
	n2.close(t) // the renewal runs in the background; Close waits for it
	if ttl := rc.PTTL(bg, vk).Val(); ttl <= time.Minute {
		t.Errorf("TTL after a hit = %v, want it renewed to an hour", ttl)
	}
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want endpoint
		err  string
	}{
		{url: "redis://127.0.0.1:6380", want: endpoint{addrs: []string{"127.0.0.1:6380"}}},
		{url: "redis://cache", want: endpoint{addrs: []string{"cache:6379"}}},
		{url: "rediss://u:p%40ss@h:1/2", want: endpoint{addrs: []string{"h:1"}, user: "u", password: "p@ss", db: 2, tls: true}},
		{url: "redis://:pw@a:1,b:2,[::1]:3", want: endpoint{addrs: []string{"a:1", "b:2", "[::1]:3"}, password: "pw"}},
		{url: "redis://a:1?addr=b:2&addr=c:3", want: endpoint{addrs: []string{"a:1", "b:2", "c:3"}}},
		{url: "http://a:1", err: "unknown scheme"},
		{url: "redis://", err: "no server address"},
		{url: "redis://a:1/x", err: "not a number"},
		{url: "redis://a:1,b:2/3", err: "no database"},
		{url: "redis://a:99999", err: "bad port"},
		// Other clients' parameters, which the store would ignore.
		{url: "redis://a:1/0?db=5", err: "unknown parameter"},
		{url: "redis://a:1?password=pw", err: "unknown parameter"},
		{url: "redis://a:1?addr=b:2&protocol=3", err: "unknown parameter"},
	} {
		got, err := parseURL(tc.url)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.url, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case strings.Join(got.addrs, " ") != strings.Join(tc.want.addrs, " ") || got.user != tc.want.user ||
			got.password != tc.want.password || got.db != tc.want.db || got.tls != tc.want.tls:
			t.Errorf("%s: got %+v, want %+v", tc.url, got, tc.want)
		}
	}
}

func TestOpenRedactsPassword(t *testing.T) {
	_, err := Open(Options{URL: "redis://user:hunter2@host:1/notanumber"})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "KCACHE_REMOTE") {
		t.Errorf("Open error %v: want one naming KCACHE_REMOTE without the password", err)
	}
}

// TestFromConfig: the KCACHE_REMOTE* variables reach the store's options.
func TestFromConfig(t *testing.T) {
	env := map[string]string{
		"KCACHE_DIR": "/tmp/x", "KCACHE_REMOTE": "rediss://a:1", "KCACHE_REMOTE_SECRET": "s",
		"KCACHE_REMOTE_READONLY": "1", "KCACHE_REMOTE_TTL": "7d", "KCACHE_REMOTE_TIMEOUT": "250ms",
	}
	cfg, err := kcache.ConfigFromGetenv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	o := FromConfig(cfg)
	if o.URL != "rediss://a:1" || string(o.Secret) != "s" || !o.ReadOnly || o.TTL != 7*24*time.Hour || o.Timeout != 250*time.Millisecond {
		t.Errorf("options %+v", o)
	}
	env["KCACHE_REMOTE"] = "memcache://a"
	if _, err := kcache.ConfigFromGetenv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "KCACHE_REMOTE") {
		t.Errorf("bad KCACHE_REMOTE: %v", err)
	}
}

// TestLeaseReleasedOnlyByHolder: a holder whose lease expired and was
// taken by another does not free the new holder's lease.
func TestLeaseReleasedOnlyByHolder(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	a := newNode(t, srv.url(), "", Options{LeaseTTL: 300 * time.Millisecond})
	key := testKey(1)
	unlockA, err := a.remote.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	lk := unsigned.lease(key.Digest())
	// A dies without releasing: stop its renewals by expiring the lease by
	// hand and letting b take it.
	rc.Del(bg, lk)
	b := newNode(t, srv.url(), "", Options{})
	unlockB, err := b.remote.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	tokenB := rc.Get(bg, lk).Val()
	unlockA()
	a.close(t) // waits for a's release
	if got := rc.Get(bg, lk).Val(); got != tokenB {
		t.Fatalf("lease after the old holder's release = %q, want b's %q", got, tokenB)
	}
	unlockB()
	b.close(t)
	// b built nothing: the lease holds the failure marker, not b's token.
	if v := rc.Get(bg, lk).Val(); v != "" && v != failedMarker {
		t.Errorf("lease %q after its holder released it, want none or the failure marker", v)
	}
}

// TestLeaseExpiresWhenHolderStops: a lease nobody renews expires, and a
// waiter then takes it and builds.
func TestLeaseExpiresWhenHolderStops(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	key := testKey(1)
	// A holder that died: its lease is there, and nobody renews it.
	rc.Set(bg, unsigned.lease(key.Digest()), "dead holder", 300*time.Millisecond)
	n := newNode(t, srv.url(), "", Options{})
	b := &builder{size: 10}
	r, err := n.cache.GetOrBuild(bg, key, b.build(key))
	if err != nil || r.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("%v, %v; want a build once the lease expired", r.Outcome, err)
	}
}

// TestWaitBounded: a holder that never finishes is waited for only
// BuildWait; then the waiter builds.
func TestWaitBounded(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	key := testKey(1)
	rc.Set(bg, unsigned.lease(key.Digest()), "hung holder", time.Hour)
	n := newNode(t, srv.url(), "", Options{BuildWait: 200 * time.Millisecond})
	_, err := n.remote.Lock(bg, key)
	if !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("Lock = %v, want ErrWaitTimeout", err)
	}
	r, err := n.cache.GetOrBuild(bg, key, (&builder{size: 10}).build(key))
	if err != nil || r.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("%v, %v", r.Outcome, err)
	}
}

// TestACLUsers: the users the README's deployment section describes are
// enough: a writer with the commands it lists, and a read-only client
// with GET alone.
func TestACLUsers(t *testing.T) {
	srv := startServer(t)
	rc := srv.client()
	for _, user := range [][]any{
		{"ACL", "SETUSER", "writer", "on", ">wpass", "~kcache:*", "+get", "+pttl", "+set", "+del", "+exists", "+pexpire", "+eval", "+evalsha", "+ping"},
		{"ACL", "SETUSER", "reader", "on", ">rpass", "~kcache:*", "+get"},
	} {
		if err := rc.Do(bg, user...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	logs := &logBuffer{}
	w := newNode(t, "redis://writer:wpass@"+srv.addr(), "", Options{TTL: time.Hour, Logger: logs.logger()})
	for i := range 3 {
		if r, err := w.cache.GetOrBuild(bg, testKey(i), (&builder{size: 10}).build(testKey(i))); err != nil || r.Outcome != kcache.OutcomeBuilt {
			t.Fatalf("writer: %v, %v", r.Outcome, err)
		}
	}
	w.close(t)
	r := newNode(t, "redis://reader:rpass@"+srv.addr(), "", Options{ReadOnly: true, Logger: logs.logger()})
	for i := range 3 {
		if res, err := r.cache.GetOrBuild(bg, testKey(i), nil); err != nil || res.Outcome != kcache.OutcomeRemote {
			t.Fatalf("reader: %v, %v", res.Outcome, err)
		}
	}
	if logs.String() != "" {
		t.Errorf("warnings:\n%s", logs.String())
	}
}
