package disk

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestWalkParallel checks that WalkParallel sees what Walk sees, damaged
// slots included, and stops at fn's first error.
func TestWalkParallel(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	for i := range 50 {
		mustPut(t, s, i, 10+i)
	}
	writeRaw(t, s.leafDir(testKey(7).Digests())+"/0.src", []byte("damaged"))
	writeRaw(t, s.leafDir(testKey(9).Digests())+"/1.bin", []byte("stray binary"))
	describe := func(in Info) string { return in.RecordPath() + " " + errString(in.Err) }
	var serial, parallel []string
	s.Walk(ctx, func(in Info) error { serial = append(serial, describe(in)); return nil })
	var mu sync.Mutex
	err := s.WalkParallel(ctx, func(in Info) error {
		mu.Lock()
		defer mu.Unlock()
		parallel = append(parallel, describe(in))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(parallel)
	if len(serial) != 51 || !slices.Equal(serial, parallel) {
		t.Fatalf("Walk saw %d slots, WalkParallel %d:\n%v\n%v", len(serial), len(parallel), serial, parallel)
	}

	stop := errors.New("stop")
	var calls atomic.Int64
	err = s.WalkParallel(ctx, func(Info) error {
		if calls.Add(1) == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls.Load() > int64(5+scanners()) {
		t.Errorf("WalkParallel = %v after %d calls; want stop soon after the fifth", err, calls.Load())
	}
	empty := openTest(t, Options{})
	if err := empty.WalkParallel(ctx, func(Info) error { t.Fatal("called on an empty cache"); return nil }); err != nil {
		t.Error(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
