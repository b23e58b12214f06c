package disk

import (
	"context"
	"testing"
	"time"
)

// TestDeleteFreesLeafBeforeSizeUpdate checks that Delete does not hold the
// leaf's lock while it waits for the size file: a writer of the same leaf
// must not queue behind a slow size update (a walk rebuilding the total),
// and lock.go promises no lock wait while another is held.
func TestDeleteFreesLeafBeforeSizeUpdate(t *testing.T) {
	s := openTest(t, Options{LockTimeout: 5 * time.Second})
	mustPut(t, s, 1, 100)
	ctx := context.Background()
	size, err := s.lockFile(ctx, sizeName, 0) // a slow size update elsewhere
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- s.Delete(ctx, testKey(1)) }()
	leaf := s.leafDir(s.digests(testKey(1)))
	for isHit(t, s, 1, 100) { // Delete has the leaf's lock and is removing
		time.Sleep(time.Millisecond)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		unlock, err := s.lockLeaf(ctx, leaf, false, 0)
		if err == nil {
			unlock()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leaf still locked while Delete waits for the size file: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	size.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
