package deps

import (
	"context"
	"testing"
	"time"
)

// TestRecordWait: with WithRecordWait(0) a scan returns while its record's
// write is still under way, and WaitRecords waits for that write (and
// gives up when its context ends); with a wait longer than the write, the
// scan returns only once the record is stored.
func TestRecordWait(t *testing.T) {
	_, in := recordTree(t)
	scan := func(s *Scanner) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, _, err := s.Scan(context.Background(), in); err != nil {
				t.Error(err)
			}
		}()
		return done
	}
	guard := func(done <-chan struct{}, what string) {
		select {
		case <-done:
		case <-time.After(time.Minute): // a guard against a hang, not a timing
			t.Fatal(what)
		}
	}

	store := &stalledRecords{memRecords: *newMemRecords(), release: make(chan struct{})}
	s := NewScanner(nil, WithRecords(store), WithRecordWait(0))
	counting(s)
	guard(scan(s), "a scan with no record wait waited for a stalled write")
	if n := store.stores.Load(); n != 0 {
		t.Fatalf("%d records stored before the write was released", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s.WaitRecords(ctx) {
		t.Error("WaitRecords reported a stalled write done")
	}
	close(store.release)
	if !s.WaitRecords(context.Background()) {
		t.Error("WaitRecords gave up without a deadline")
	}
	if n := store.stores.Load(); n != 1 {
		t.Errorf("%d records stored after WaitRecords, want 1", n)
	}

	store = &stalledRecords{memRecords: *newMemRecords(), release: make(chan struct{})}
	s = NewScanner(nil, WithRecords(store), WithRecordWait(time.Hour))
	counting(s)
	done := scan(s)
	for store.writing.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("a scan with an hour's record wait returned before its write")
	default:
	}
	close(store.release)
	guard(done, "the scan did not return after its write")
	if n := store.stores.Load(); n != 1 {
		t.Errorf("%d records stored when the scan returned, want 1", n)
	}
}
