package objcache

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"
)

// guard bounds a test's wait for something that must happen, so that a
// regression fails instead of hanging; it asserts nothing about speed.
const guard = 30 * time.Second

// TestWaiterLeavesDuringCleanup checks that a waiter whose ctx ends returns
// at once even when the build has finished and is running the cleanup that
// comes before waking its waiters, and that this cleanup blocks: another
// entry's release hook, run because the build's insert evicted it (in
// opencl such a hook stores a binary on disk and may run an eviction
// pass), or a dependent's drop. The waiter that stays gets the object once
// the cleanup is done, and the reference counted for the waiter that left
// is given back: every object is released exactly once.
func TestWaiterLeavesDuringCleanup(t *testing.T) {
	tests := []struct {
		name     string
		disabled bool
		released []string
	}{
		// "old" fills the threshold; the insert of "new" evicts it, and
		// its release hook blocks.
		{"evicted entry's release hook", false, []string{"old", "new"}},
		// Caching off: "new" leaves the index as its build finishes, and
		// the drop of a dependent registered during the build blocks.
		{"dependent's drop", true, []string{"new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr tracker
			entered, unblock := make(chan struct{}), make(chan struct{})
			block := func() {
				close(entered)
				<-unblock
			}
			c := New[string, *object](Options[*object]{Threshold: 10, Disabled: tt.disabled, Release: func(o *object) {
				if o.name == "old" {
					block()
				}
				tr.release(o)
			}})
			if !tt.disabled {
				mustGet(t, c, "old", builder("old", 10)).Release()
			}
			gate := make(chan struct{})
			build := func(context.Context) (*object, int64, error) {
				<-gate
				if tt.disabled && !c.AddDependent("new", block) {
					t.Error("no entry for the build under way")
				}
				return &object{name: "new"}, 10, nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			left := make(chan error, 1)
			go func() {
				h, err := c.GetOrBuild(ctx, "new", build)
				if err == nil {
					h.Release()
				}
				left <- err
			}()
			awaitWaiters(c, "new", 1)
			stayed := make(chan *Handle[*object], 1)
			go func() {
				h, err := c.GetOrBuild(context.Background(), "new", build)
				if err != nil {
					t.Error(err)
				}
				stayed <- h
			}()
			awaitWaiters(c, "new", 2)
			close(gate)
			<-entered // the build finished and its cleanup is blocked
			cancel()
			select {
			case err := <-left:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("leaving waiter got %v, want context.Canceled", err)
				}
			case <-time.After(guard):
				t.Fatal("a waiter whose ctx ended still waits for the build's cleanup")
			}
			close(unblock)
			h := <-stayed
			if h == nil || h.Value().name != "new" || h.Value().freed.Load() != 0 {
				t.Fatal("the remaining waiter did not get the live object")
			}
			h.Release()
			c.Remove("new")
			// The leaver's reference is given back on a goroutine of its own.
			for !slices.Contains(tr.list(), "new") {
				runtime.Gosched()
			}
			if got := tr.list(); !slices.Equal(got, tt.released) {
				t.Fatalf("released %v, want %v, each once", got, tt.released)
			}
		})
	}
}
