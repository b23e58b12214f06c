package opencl

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/keyparts"
	"github.com/kcache/kcache/internal/syncbuf"
)

// privateProcess is a tier set over the disk tier in cache, as a kcache
// command with its own PoCL directory dir makes one, logging at debug
// level into its buffer.
func privateProcess(t *testing.T, cache, dir string) (*tierSet, *syncbuf.Buffer) {
	t.Helper()
	testFixture(t) // PoCL's devices, and so the environment they started with
	t.Setenv("POCL_CACHE_DIR", dir)
	// As a process that started PoCL with dir (the key takes PoCL's
	// directory from the environment of its device init).
	started := initEnv.env
	initEnv.env = os.Environ()
	t.Cleanup(func() { initEnv.env = started })
	log := &syncbuf.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := newTierSetLogged(t, cache, CacheOptions{CommitDelay: -1, PrivateDir: dir}, logger)
	if ts.cache.identity(testFixture(t).dev).dev.Platform != keyparts.PoCL {
		t.Skip("the private directory is PoCL's")
	}
	return ts, log
}

// TestPrivatePoCLDirRecords: caches whose PoCL directories are their own
// (kcache's commands) keep dependency records that serve one another. The
// second reads its key from the first one's record and is served from
// disk; a third, whose directory holds a header that shadows the one the
// record's process found, must see it: through real PoCL, which searches
// that directory, it rebuilds and computes with the shadowing header.
func TestPrivatePoCLDirRecords(t *testing.T) {
	testFixture(t) // PoCL takes its directory when it starts, before the ones set here
	pocl := keyparts.PoCLTempDir(os.LookupEnv)
	if err := os.MkdirAll(pocl, 0o700); err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	t.Chdir(wd)
	writeFile(t, filepath.Join(wd, "scale.h"), "#define SCALE 1.0f\n", time.Hour)
	cache := t.TempDir()
	src := Source{Code: []byte(headerSource)}

	first, _ := privateProcess(t, cache, t.TempDir())
	p := first.program(t, src)
	if p.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("first process: outcome %v, want built", p.Outcome)
	}
	first.saxpy(t, p, 1)
	first.cache.Close()

	second, log := privateProcess(t, cache, t.TempDir())
	q := second.program(t, src)
	if q.Outcome != kcache.OutcomeDisk {
		t.Fatalf("second process: outcome %v, want a disk hit", q.Outcome)
	}
	if !strings.Contains(log.String(), "dependency record holds") {
		t.Errorf("the second process's key did not come from the first one's record:\n%s", log.String())
	}
	second.saxpy(t, q, 1)

	shadow := filepath.Join(pocl, "scale.h")
	t.Cleanup(func() { os.Remove(shadow) })
	writeFile(t, shadow, "#define SCALE 6.0f\n", time.Minute)
	third, log := privateProcess(t, cache, pocl)
	r := third.program(t, src)
	if r.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("with a header in its PoCL directory: outcome %v, want built (a %v hit serves the old binary)", r.Outcome, r.Outcome)
	}
	if !strings.Contains(log.String(), "dependency record stale") {
		t.Errorf("the third process did not check the record:\n%s", log.String())
	}
	third.saxpy(t, r, 6)
}
