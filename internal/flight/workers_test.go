package flight

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestKeptGoroutinesBounded starts many builds at once, then checks that
// once they end at most maxIdle goroutines stay, waiting for builds, and
// that later builds run on them.
func TestKeptGoroutinesBounded(t *testing.T) {
	base := runtime.NumGoroutine()
	const n = 4 * maxIdle
	release := make(chan struct{})
	var started, ended sync.WaitGroup
	started.Add(n)
	ended.Add(n)
	for range n {
		Go(context.Background(), nil, func(context.Context) (int, error) {
			started.Done()
			<-release
			return 1, nil
		}, func(Result[int]) { ended.Done() })
	}
	started.Wait()
	close(release)
	ended.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base+maxIdle {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines stay after the builds, want at most %d", runtime.NumGoroutine()-base, maxIdle)
		}
		time.Sleep(time.Millisecond)
	}
	// A build now finds a kept goroutine: no new one is started.
	for range 3 * maxIdle {
		done := make(chan struct{})
		Go(context.Background(), nil, func(context.Context) (int, error) { return 1, nil },
			func(Result[int]) { close(done) })
		<-done
	}
	if got := runtime.NumGoroutine(); got > base+maxIdle {
		t.Fatalf("%d goroutines after sequential builds, want at most %d", got-base, maxIdle)
	}
}

// TestGoexitEndsKeptGoroutine checks that a build that calls
// runtime.Goexit is reported, and that builds after it still run.
func TestGoexitEndsKeptGoroutine(t *testing.T) {
	for range 2 * maxIdle {
		res := make(chan Result[int], 1)
		Go(context.Background(), nil, func(context.Context) (int, error) { runtime.Goexit(); return 0, nil },
			func(r Result[int]) { res <- r })
		if r := <-res; r.Returned || r.Err != ErrGoexit {
			t.Fatalf("Goexit: %+v", r)
		}
		Go(context.Background(), nil, func(context.Context) (int, error) { return 7, nil },
			func(r Result[int]) { res <- r })
		if r := <-res; r.Val != 7 || r.Err != nil {
			t.Fatalf("after Goexit: %+v", r)
		}
	}
}
