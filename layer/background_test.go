package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kcache/kcache/internal/layerstore"
)

// noWorker is the environment entry that keeps a run from starting the
// background worker, so that the test drives the queue by hand.
const noWorker = envWorker + "=/nonexistent/kcache"

// worker runs the background worker in the foreground on cache.
func worker(t *testing.T, cache string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(workerBin, "layer-worker")
	cmd.Env = append(os.Environ(), "KCACHE_DIR="+cache)
	return cmd
}

// TestBackgroundWorkerSafety drives the queue of build orders by hand,
// with real processes: a false order (the key of one program, the source of
// another) and a damaged order file are dropped and store nothing; a
// worker SIGKILLed in the middle of its drain, then two workers racing,
// still store the true order once, exactly, and the next run hits.
func TestBackgroundWorkerSafety(t *testing.T) {
	requireLayer(t)
	a := app{name: "norelease", argv: []string{compileC(t, "norelease")}, programs: 1, normalize: func(s string) string { return s }}
	dir, cache := t.TempDir(), t.TempDir()
	base := a.run(t, dir, "")
	if base.err != nil {
		t.Fatal(base.err)
	}
	cold := a.runOnly(dir, append(env(t, cache), noWorker))
	checkRun(t, a, "cold", cold, base.stdout, 1)
	q := layerstore.NewQueue(cache)
	paths, err := q.List()
	if err != nil || len(paths) != 1 {
		t.Fatalf("queued orders after the cold run: %q, %v; want 1", paths, err)
	}
	if n := len(entries(t, cache)); n != 0 {
		t.Fatalf("the cold run stored %d entries itself, want 0 (the worker stores)", n)
	}
	order, err := q.Read(paths[0])
	if err != nil {
		t.Fatal(err)
	}

	// The false order replaces the true one (same key, so same file).
	lie := order
	lie.Source = bytes.Replace(order.Source, []byte("2 * a[i] + 1"), []byte("3 * a[i] + 1"), 1)
	if bytes.Equal(lie.Source, order.Source) {
		t.Fatal("testdata/norelease.c's kernel changed; update the false order")
	}
	if err := q.Put(lie); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(q.Dir(), "damaged.order"), []byte("kcache-layer-order-1\n\x00\x01torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := worker(t, cache).CombinedOutput(); err != nil {
		t.Fatalf("worker: %v\n%s", err, out)
	}
	if left, _ := q.List(); len(left) != 0 {
		t.Errorf("orders left after the drain: %q", left)
	}
	if n := len(entries(t, cache)); n != 0 {
		t.Fatalf("the worker stored %d entries from a false order and a damaged one, want 0", n)
	}
	log, _ := os.ReadFile(filepath.Join(q.Dir(), "worker.log"))
	if !strings.Contains(string(log), "dropped") {
		t.Errorf("the worker's log says nothing dropped:\n%s", log)
	}

	// The true order, a worker killed while it drains, then two at once.
	if err := q.Put(order); err != nil {
		t.Fatal(err)
	}
	killed := worker(t, cache)
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	killed.Process.Signal(syscall.SIGKILL)
	killed.Wait()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if out, err := worker(t, cache).CombinedOutput(); err != nil {
				t.Errorf("worker: %v\n%s", err, out)
			}
		})
	}
	wg.Wait()
	if err := waitWorker(cache); err != nil {
		t.Fatal(err)
	}
	if n := len(entries(t, cache)); n != 1 {
		t.Fatalf("cache holds %d entries after the drains, want 1", n)
	}
	checkRun(t, a, "warm", a.run(t, dir, cache), base.stdout, 0)
}

// TestWaitersLeaveItToTheWorker starts a process while the key it builds
// is ordered and no worker has stored it yet: it waits for the worker it
// starts, rather than building the program a second time.
func TestWaitersLeaveItToTheWorker(t *testing.T) {
	requireLayer(t)
	a := app{name: "norelease", argv: []string{compileC(t, "norelease")}, programs: 1, normalize: func(s string) string { return s }}
	dir, cache := t.TempDir(), t.TempDir()
	base := a.run(t, dir, "")
	if base.err != nil {
		t.Fatal(base.err)
	}
	checkRun(t, a, "cold", a.runOnly(dir, append(env(t, cache), noWorker)), base.stdout, 1)
	// The order is queued, nothing stored, no worker runs: the next run
	// must start one and take its entry.
	checkRun(t, a, "second", a.run(t, dir, cache), base.stdout, 0)
	if err := waitWorker(cache); err != nil {
		t.Fatal(err)
	}
	if n := len(entries(t, cache)); n != 1 {
		t.Errorf("cache holds %d entries, want 1", n)
	}
}
