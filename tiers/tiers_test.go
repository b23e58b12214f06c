package tiers

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// TestOpenTakesRemoteFromConfig: with KCACHE_REMOTE set, the default
// set-up has a remote tier below the disk; with a server that is not
// there, the build still succeeds, and the remote tier counts the
// failure.
func TestOpenTakesRemoteFromConfig(t *testing.T) {
	for _, tc := range []struct {
		name         string
		env          map[string]string
		remoteErrors int64
	}{
		{"disk only", map[string]string{}, 0},
		{"disk and remote", map[string]string{"KCACHE_REMOTE": "redis://127.0.0.1:1", "KCACHE_REMOTE_TIMEOUT": "50ms"}, 2}, // the lookup and the lease (and the write, in the background)
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["KCACHE_DIR"] = t.TempDir()
			cfg, err := kcache.ConfigFromGetenv(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			c := Open(cfg, nil)
			key := &kcache.Key{Image: kcache.Image{Format: "test", Source: []byte("k")}}
			r, err := c.GetOrBuild(context.Background(), key, func(context.Context) ([]byte, error) { return []byte("bin"), nil })
			if err != nil || r.Outcome != kcache.OutcomeBuilt {
				t.Fatalf("%v, %v", r.Outcome, err)
			}
			// The build's write to the remote tier runs in the background:
			// by now it may have failed too, or not yet.
			s := c.Stats()
			if s.Disk.Misses != 1 || s.Remote.Errors < tc.remoteErrors || s.Remote.Errors > tc.remoteErrors+min(tc.remoteErrors, 1) {
				t.Errorf("stats %+v; want %d remote errors, or one more for the background write", s, tc.remoteErrors)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := c.Close(ctx); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
}

// TestCancelledCallerStillStores: a caller whose context ends after its
// build (a request's deadline during a long compile) commits the binary,
// and the disk tier keeps it. Before, the disk's Put took the caller's
// context, failed with it, and logged a tier failure: the compile was
// lost to every later process of the machine.
func TestCancelledCallerStillStores(t *testing.T) {
	dir := t.TempDir()
	cfg, err := kcache.ConfigFromGetenv(func(k string) string { return map[string]string{"KCACHE_DIR": dir}[k] })
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c := Open(cfg, logger)
	key := &kcache.Key{Image: kcache.Image{Format: "test", Source: []byte("k")}}
	ctx, cancel := context.WithCancel(context.Background())
	_, pending, err := c.Lookup(ctx, key)
	if err != nil || pending == nil {
		t.Fatalf("lookup: %v, %v; want a miss to build", pending, err)
	}
	cancel() // while the compiler runs
	pending.Commit(ctx, []byte("bin"), time.Second)
	if s := c.Stats(); s.Disk.Errors != 0 {
		t.Errorf("disk errors %d after a cancelled caller's commit", s.Disk.Errors)
	}
	if logs.Len() != 0 {
		t.Errorf("warnings:\n%s", logs.String())
	}
	later := Open(cfg, nil)
	if r, err := later.Get(context.Background(), key); err != nil || r.Outcome != kcache.OutcomeDisk {
		t.Errorf("a later process: %v, %v; want the committed binary from disk", r.Outcome, err)
	}
}
