// Package slowrecords is a disk store whose dependency records take a
// while to write, as on a loaded or networked file system: for the tests
// of what must wait for them (a cache's Close).
package slowrecords

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// Delay is how long each record's write takes: past the 100 ms a scan
// waits for its record before it leaves the write to go on.
const Delay = 300 * time.Millisecond

// Store is a disk store whose dependency records take Delay to write. It
// keeps the disk store's other methods (its locks among them), so a
// kcache.Cache keeps records in it.
type Store struct {
	*disk.Store
	writing, written atomic.Int32
}

// Put writes e, after Delay where it is a dependency record.
func (s *Store) Put(ctx context.Context, key *kcache.Key, e kcache.Entry) error {
	if kcache.IsDependencyRecord(key) {
		s.writing.Add(1)
		defer s.writing.Add(-1)
		time.Sleep(Delay)
		defer s.written.Add(1)
	}
	return s.Store.Put(ctx, key, e)
}

// Writing is how many records are being written now.
func (s *Store) Writing() int { return int(s.writing.Load()) }

// Written is how many records were written.
func (s *Store) Written() int { return int(s.written.Load()) }

// CheckClose calls closeCache, the Close of a cache over s after a key
// began to write a record, and fails t unless a record was being written
// or written before it (else the check proves nothing), none is being
// written after it, and one was written.
func (s *Store) CheckClose(t testing.TB, closeCache func()) {
	t.Helper()
	if s.Writing() == 0 && s.Written() == 0 {
		t.Fatal("the key wrote no dependency record: the test proves nothing")
	}
	closeCache()
	if n := s.Writing(); n != 0 {
		t.Errorf("Close returned with %d dependency records still being written", n)
	}
	if s.Written() == 0 {
		t.Error("no dependency record was written")
	}
}
