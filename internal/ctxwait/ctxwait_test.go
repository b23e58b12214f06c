package ctxwait

import (
	"context"
	"sync"
	"testing"
)

// TestWaitGroup: a count that reaches zero is reported, and a context that
// ends first stops the wait.
func TestWaitGroup(t *testing.T) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 8 {
		wg.Go(func() { <-release })
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if WaitGroup(ctx, &wg) {
		t.Error("reported done while every goroutine still waits")
	}
	close(release)
	if !WaitGroup(context.Background(), &wg) {
		t.Error("not done after every goroutine returned")
	}
}
