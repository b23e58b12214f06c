package redis

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// TestServerFaults: Redis killed in the middle of a run, paused with DEBUG
// SLEEP, then restarted. Every build succeeds throughout, the breaker
// keeps the dead server off after a few failures, and the tier is used
// again once the server is back.
func TestServerFaults(t *testing.T) {
	srv := startServer(t)
	logs := &logBuffer{}
	const backoff = 300 * time.Millisecond
	n := newNode(t, srv.url(), "", Options{Backoff: backoff, Logger: logs.logger()})
	b := &builder{size: 1000}
	get := func(i int) kcache.Result {
		t.Helper()
		r, err := n.cache.GetOrBuild(bg, testKey(i), b.build(testKey(i)))
		if err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		return r
	}
	for i := range 10 {
		get(i)
	}
	flush(t, n)

	srv.kill()
	for i := 10; i < 30; i++ {
		if r := get(i); r.Outcome != kcache.OutcomeBuilt {
			t.Fatalf("key %d with the server dead: %v", i, r.Outcome)
		}
	}
	s := n.cache.Stats()
	if s.Remote.Errors == 0 || s.Remote.Errors > 2*DefaultFailures {
		t.Errorf("remote errors with a dead server: %d; want a few, then the breaker open", s.Remote.Errors)
	}
	if w := logs.String(); strings.Count(w, "remote tier unavailable") != 1 || !strings.Contains(w, "KCACHE_REMOTE=") {
		t.Errorf("want one warning naming KCACHE_REMOTE, got:\n%s", w)
	}

	// Back, empty (no persistence): after the backoff, writes and hits
	// resume.
	srv.start()
	time.Sleep(backoff)
	waitUsable(t, n)
	for i := 100; i < 105; i++ {
		get(i)
	}
	flush(t, n)
	m := newNode(t, srv.url(), "", Options{})
	if r, err := m.cache.Get(bg, testKey(104)); err != nil || r.Outcome != kcache.OutcomeRemote {
		t.Fatalf("after the restart: %v, %v; want the tier back", r.Outcome, err)
	}

	// Paused: lookups time out, builds go on.
	pause := srv.client()
	go pause.Do(context.Background(), "DEBUG", "SLEEP", "1.5")
	time.Sleep(50 * time.Millisecond)
	before := n.cache.Stats().Remote.Timeouts
	for i := 200; i < 203; i++ {
		if r := get(i); r.Outcome != kcache.OutcomeBuilt {
			t.Fatalf("key %d with the server paused: %v", i, r.Outcome)
		}
	}
	if got := n.cache.Stats().Remote.Timeouts; got <= before {
		t.Errorf("timeouts %d after lookups on a paused server; want more than %d", got, before)
	}
}

// flush waits, bounded, until n's store has sent (or dropped) every
// queued write, as a process does before it exits, but keeps the store
// open.
func flush(t *testing.T, n *node) {
	t.Helper()
	w := n.remote.w
	for range 1000 {
		w.mu.Lock()
		left := len(w.pending)
		w.mu.Unlock()
		if left == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("queued writes not sent")
}

// waitUsable waits, bounded, until n's store answers again.
func waitUsable(t *testing.T, n *node) {
	t.Helper()
	for range 100 {
		if _, err := n.remote.Get(bg, testKey(-1)); err != nil && strings.Contains(err.Error(), "no entry") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the remote tier did not come back")
}

// TestWarnings: a wrong password, a TLS mismatch and an unreachable
// address each give one clear line naming KCACHE_REMOTE, and the build
// goes on.
func TestWarnings(t *testing.T) {
	srv := startServer(t, "--requirepass", "right")
	for _, tc := range []struct {
		name, url, want string
	}{
		{"wrong password", "redis://:wrong@" + srv.addr(), "authentication failed"},
		{"no password", "redis://" + srv.addr(), "authentication failed"},
		{"TLS to a plain server", "rediss://:right@" + srv.addr(), "TLS handshake failed"},
		{"unreachable", "redis://127.0.0.1:" + strconv.Itoa(freePort(t)), "server unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logBuffer{}
			// A timeout of a second leaves a loaded machine time to see
			// the handshake fail before the lookup gives up.
			n := newNode(t, tc.url, "", Options{Timeout: time.Second, Logger: logs.logger()})
			r, err := n.cache.GetOrBuild(bg, testKey(1), (&builder{size: 10}).build(testKey(1)))
			if err != nil || r.Outcome != kcache.OutcomeBuilt {
				t.Fatalf("%v, %v", r.Outcome, err)
			}
			w := logs.String()
			lines := strings.Split(strings.TrimSpace(w), "\n")
			if !strings.Contains(lines[0], tc.want) || !strings.Contains(lines[0], "KCACHE_REMOTE=") || strings.Contains(w, "right") {
				t.Errorf("first warning does not say %q naming KCACHE_REMOTE (without the password):\n%s", tc.want, w)
			}
		})
	}
}

// TestFullAndReadOnlyServer: a server out of memory (maxmemory with
// noeviction), a read-only replica and a master short of the replicas its
// min-replicas-to-write asks for refuse writes and leases; builds succeed,
// and the warning says what is wrong (for the last, it said "server
// failed").
func TestFullAndReadOnlyServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"full", []string{"--maxmemory", "1mb", "--maxmemory-policy", "noeviction"}, "out of memory"},
		{"read-only replica", []string{"--replicaof", "127.0.0.1", strconv.Itoa(freePort(t))}, "read-only replica"},
		{"too few replicas", []string{"--min-replicas-to-write", "1"}, "min-replicas-to-write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, tc.args...)
			if tc.name == "full" {
				// Fill it: 2 MB of other data against a 1 MB limit.
				rc := srv.client()
				for i := range 20 {
					rc.Set(bg, "ballast:"+strconv.Itoa(i), strings.Repeat("x", 100<<10), 0)
				}
			}
			logs := &logBuffer{}
			n := newNode(t, srv.url(), "", Options{Timeout: time.Second, Logger: logs.logger()})
			b := &builder{size: 200 << 10}
			for i := range 3 {
				r, err := n.cache.GetOrBuild(bg, testKey(i), b.build(testKey(i)))
				if err != nil || r.Outcome != kcache.OutcomeBuilt {
					t.Fatalf("key %d: %v, %v", i, r.Outcome, err)
				}
			}
			flush(t, n)
			if w := logs.String(); !strings.Contains(w, tc.want) || !strings.Contains(w, "KCACHE_REMOTE=") {
				t.Errorf("warnings do not say %q naming KCACHE_REMOTE:\n%s", tc.want, w)
			}
		})
	}
}

// TestQueueDropsRatherThanBlocks: with the server hung, Put returns at
// once whatever is queued, and Close gives up at its deadline, saying
// how many writes it dropped.
func TestQueueDropsRatherThanBlocks(t *testing.T) {
	hung := hungServer(t)
	s, err := Open(Options{URL: "redis://" + hung, QueueSize: 2, WriteTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		// Were Put to wait for room in the queue, this loop would hang
		// for the writers' minute-long timeouts.
		if err := s.Put(bg, testKey(i), kcache.Entry{Binary: []byte("bin")}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	err = s.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Errorf("Close = %v, want an error saying writes were dropped", err)
	}
}

// hungServer listens on loopback, accepts, and never answers; it returns
// its address.
func hungServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return l.Addr().String()
}

// TestLeaseRenewedDuringLongBuild: a build that outlasts the lease's TTL
// keeps it, renewed, so the other machine waits instead of building too.
func TestLeaseRenewedDuringLongBuild(t *testing.T) {
	srv := startServer(t)
	opts := Options{LeaseTTL: 300 * time.Millisecond, Timeout: time.Second}
	a := newNode(t, srv.url(), tempDir(t, "a"), opts)
	b := newNode(t, srv.url(), tempDir(t, "b"), opts)
	key := testKey(1)
	slow := &builder{size: 1000, delay: 1500 * time.Millisecond}
	started := make(chan struct{})
	done := make(chan kcache.Result, 1)
	go func() {
		r, err := a.cache.GetOrBuild(bg, key, func(ctx context.Context) ([]byte, error) {
			close(started)
			return slow.build(key)(ctx)
		})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	<-started
	other := &builder{size: 1000}
	r, err := b.cache.GetOrBuild(bg, key, other.build(key))
	if err != nil || r.Outcome != kcache.OutcomeWaited || other.runs.Load() != 0 {
		t.Fatalf("second machine: %v, %v, %d builds; want waited, none", r.Outcome, err, other.runs.Load())
	}
	if ra := <-done; ra.Outcome != kcache.OutcomeBuilt {
		t.Errorf("first machine: %v", ra.Outcome)
	}
}

// TestCancelledCallerIsNoServerFailure: lookups and lease requests whose
// caller cancelled them say nothing about the server. Before, each fed
// the breaker: a few callers that gave up switched the tier off for every
// other caller of the process, for the whole backoff, with a warning that
// the server was unavailable.
func TestCancelledCallerIsNoServerFailure(t *testing.T) {
	srv := startServer(t)
	logs := &logBuffer{}
	n := newNode(t, srv.url(), "", Options{Backoff: time.Hour, Logger: logs.logger()})
	b := &builder{size: 2000}
	if _, err := n.cache.GetOrBuild(bg, testKey(0), b.build(testKey(0))); err != nil {
		t.Fatal(err)
	}
	flush(t, n)
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	for i := range 2 * DefaultFailures {
		if _, err := n.remote.Get(cancelled, testKey(i)); !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled lookup: %v; want the caller's error", err)
		}
		if _, err := n.remote.Lock(cancelled, testKey(i)); !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled lease request: %v; want the caller's error", err)
		}
		n.remote.Delete(cancelled, testKey(100+i))
		n.cache.Lookup(cancelled, testKey(200+i))
	}
	if r, err := n.cache.Get(bg, testKey(0)); err != nil || r.Outcome != kcache.OutcomeRemote {
		t.Errorf("after cancelled calls: %v, %v; want a remote hit", r.Outcome, err)
	}
	if s := n.cache.Stats().Remote; s.Errors != 0 {
		t.Errorf("cancelled calls counted as %d errors of the tier", s.Errors)
	}
	if w := logs.String(); w != "" {
		t.Errorf("cancelled calls logged warnings:\n%s", w)
	}
}
