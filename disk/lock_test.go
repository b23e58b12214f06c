package disk

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLockExcludes(t *testing.T) {
	s := openTest(t, Options{BuildWait: 20 * time.Millisecond})
	ctx := context.Background()
	unlock, err := s.Lock(ctx, testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	// flock excludes other open file descriptions, in this process too.
	if u, err := s.Lock(ctx, testKey(1)); !errors.Is(err, ErrLockTimeout) {
		u()
		t.Fatalf("second Lock of a held key: %v, want ErrLockTimeout", err)
	} else {
		u() // a no-op, but never nil
	}
	other, err := s.Lock(ctx, testKey(2))
	if err != nil {
		t.Fatalf("Lock of another key: %v", err)
	}
	other()
	unlock()
	unlock() // idempotent
	again, err := s.Lock(ctx, testKey(1))
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	again()
}

func TestLockWaitsForRelease(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	unlock, err := s.Lock(ctx, testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() {
		u, err := s.Lock(ctx, testKey(1))
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Lock returned while the key was held: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
}

func TestLockHonorsContext(t *testing.T) {
	s := openTest(t, Options{})
	unlock, err := s.Lock(context.Background(), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(ctx, testKey(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock: %v, want DeadlineExceeded", err)
	}
}

// TestLockAfterLeafRemoved checks that a lock whose file was removed by a
// pass is taken afresh, and that a waiter holding the lock on an unlinked
// file starts over on the new one.
func TestLockAfterLeafRemoved(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	leaf := s.leafDir(s.digests(testKey(1)))
	unlock, err := s.Lock(ctx, testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	u, err := s.lockLeaf(ctx, leaf, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.dropLeafIfEmpty(leaf)
	u()
	if _, err := os.Stat(leaf); !os.IsNotExist(err) {
		t.Fatalf("leaf not removed: %v", err)
	}
	unlock, err = s.Lock(ctx, testKey(1))
	if err != nil {
		t.Fatalf("Lock after removal: %v", err)
	}
	unlock()

	// Simulate losing the race: open the lock file, have it unlinked and
	// replaced, then lock. lockPath must notice and lock the new file.
	path := filepath.Join(leaf, lockName)
	f, err := s.openLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if linked(f, path) {
		t.Fatal("linked reports an unlinked file as linked")
	}
	f.Close()
	g, err := s.lockPath(ctx, path, s.openLockFile, leaf, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !linked(g, path) {
		t.Fatal("lockPath returned an unlinked file")
	}
	g.Close()
}

func TestLockReadOnlyCacheDoesNotBlock(t *testing.T) {
	s := openTest(t, Options{})
	// A leaf path that cannot be created: a file sits where a directory
	// level should be.
	leaf := s.leafDir(s.digests(testKey(1)))
	os.MkdirAll(filepath.Dir(filepath.Dir(leaf)), 0o700)
	writeRaw(t, filepath.Dir(leaf), []byte("in the way"))
	unlock, err := s.Lock(context.Background(), testKey(1))
	if err == nil || unlock == nil {
		t.Fatalf("Lock = %v, want an error and a non-nil unlock", err)
	}
	unlock()
}
