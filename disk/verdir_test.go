package disk

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// TestLookupThroughHandle shows that a lookup opens records below the
// store's handle on its version directory, not by path: after the whole
// cache is moved, a store opened before the move still finds what it
// holds. (A lookup by path would miss; either is sound, since a hit is
// the key's own record and checked binary wherever it lies.)
func TestLookupThroughHandle(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "cache")
	s := openTest(t, Options{Dir: root})
	mustPut(t, s, 1, 100)
	if err := os.Rename(root, filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	checkGet(t, s, 1, 100)
}

// TestLookupAfterClearElsewhere: another store (another process) clears
// the cache, which renames the version directory aside and makes a new
// one. A store opened before finds none of the old entries once they are
// removed, finds what the other stores afterwards and what it stores
// itself, and never serves a wrong binary.
func TestLookupAfterClearElsewhere(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	a := openTest(t, Options{Dir: root})
	b := openTest(t, Options{Dir: root})
	mustPut(t, a, 1, 100)
	checkGet(t, a, 1, 100)
	old := a.vdir.Load()
	if err := b.Clear(context.Background()); err != nil {
		t.Fatal(err)
	}
	if isHit(t, a, 1, 100) {
		t.Fatal("an entry cleared by another store is still a hit")
	}
	if a.vdir.Load() == old {
		t.Fatal("the stale handle was kept after a miss")
	}
	mustPut(t, b, 2, 200)
	checkGet(t, a, 2, 200)
	mustPut(t, a, 3, 300)
	checkGet(t, a, 3, 300)
	checkGet(t, b, 3, 300)
}

// TestLookupAfterReplace: the version directory is replaced by another
// cache's while a store has it open; the store's next miss through its
// handle finds the new directory's entries by path, and takes a handle on
// it.
func TestLookupAfterReplace(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "cache")
	a := openTest(t, Options{Dir: root})
	mustPut(t, a, 1, 100)
	other := openTest(t, Options{Dir: filepath.Join(base, "other")})
	mustPut(t, other, 2, 200)
	if err := os.Rename(versionDir(root), filepath.Join(base, "aside")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(versionDir(other.root), versionDir(root)); err != nil {
		t.Fatal(err)
	}
	checkGet(t, a, 2, 200)
	if h := a.vdir.Load(); h == nil || h.stale(a.dir) {
		t.Fatalf("handle %v after the miss: want one on the new directory", h)
	}
	checkGet(t, a, 2, 200)
}

// TestLookupWithoutHandle: where no handle could be opened (or the
// version directory is gone), lookups go by path.
func TestLookupWithoutHandle(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	s := openTest(t, Options{Dir: root})
	mustPut(t, s, 1, 100)
	s.vdir.Store(nil)
	checkGet(t, s, 1, 100)
	if err := os.RemoveAll(versionDir(root)); err != nil {
		t.Fatal(err)
	}
	if isHit(t, s, 1, 100) {
		t.Fatal("hit in a removed cache")
	}
}

// TestDirHandleClosed checks that stores dropped without Close do not
// keep their handles' descriptors open.
func TestDirHandleClosed(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	before := openFDs(t)
	for range 200 {
		s, err := Open(Options{Dir: root})
		if err != nil {
			t.Fatal(err)
		}
		_ = s
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		runtime.GC()
		n := openFDs(t)
		if n < before+50 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open after 200 stores were dropped, %d before", n, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	names, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(names)
}

// BenchmarkHitOpen compares a hit whose record is opened below the
// store's handle on its version directory with one opened by path, in a
// root some levels deep.
func BenchmarkHitOpen(b *testing.B) {
	root := filepath.Join(b.TempDir(), "a", "b", "c", "cache")
	s := openTest(b, Options{Dir: root})
	mustPut(b, s, 1, 8<<10)
	h := s.vdir.Load()
	for _, by := range []string{"handle", "path"} {
		b.Run(by, func(b *testing.B) {
			s.vdir.Store(h)
			if by == "path" {
				s.vdir.Store(nil)
			}
			key := testKey(1).Prepare()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.GetPrepared(context.Background(), key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLookupConcurrentClear: lookups from many goroutines through one
// store's handle while another store clears the cache and stores again,
// over and over: every hit is the key's own binary, and once the clears
// stop, every key the other store put last is found.
func TestLookupConcurrentClear(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	a := openTest(t, Options{Dir: root})
	b := openTest(t, Options{Dir: root})
	const keys = 8
	for i := range keys {
		mustPut(t, b, i, 64+i)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 8 {
			if err := b.Clear(context.Background()); err != nil {
				t.Error(err)
				return
			}
			for i := range keys {
				if err := b.Put(context.Background(), testKey(i), kcache.Entry{Binary: testBinary(i, 64+i)}); err != nil {
					t.Errorf("Put(%d): %v", i, err)
					return
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := (g + n) % keys
				// A miss is allowed; a wrong binary, or an error that is no
				// miss, is not.
				e, err := a.Get(context.Background(), testKey(i))
				switch {
				case err != nil && !errors.Is(err, kcache.ErrMiss):
					t.Errorf("Get(%d): error does not wrap ErrMiss: %v", i, err)
					return
				case err == nil && !bytes.Equal(e.Binary, testBinary(i, 64+i)):
					t.Errorf("Get(%d): WRONG BINARY served (%d bytes)", i, len(e.Binary))
					return
				}
			}
		}()
	}
	<-done
	close(stop)
	wg.Wait()
	for i := range keys {
		checkGet(t, a, i, 64+i)
	}
}

// TestLegacyBinaryThroughHandle: an entry of the first format keeps its
// binary in a file beside its record, which a lookup through the
// handle reads through the same handle: after the version directory was
// replaced by one holding another entry at the same place, the record
// and the binary still come from one tree (a hit of the old entry,
// whole), never the record of one and the binary of the other.
func TestLegacyBinaryThroughHandle(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "cache")
	a := openTest(t, Options{Dir: root})
	putLegacy(t, a, 1, 100)
	checkGet(t, a, 1, 100)
	if err := os.Rename(versionDir(root), filepath.Join(base, "aside")); err != nil {
		t.Fatal(err)
	}
	b := openTest(t, Options{Dir: root})
	putLegacy(t, b, 1, 200)
	checkGet(t, a, 1, 100) // through a's handle, on the tree set aside
	checkGet(t, b, 1, 200)
}
