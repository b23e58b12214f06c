package redis

import (
	"context"
	"strconv"
	"strings"
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
