// Package ctxwait waits for a sync.WaitGroup within a context: an exit
// path that waits for background writes must not hang behind a stalled
// file system.
package ctxwait

import (
	"context"
	"sync"
	"time"
)

// CloseWait bounds what a cache's Close waits for on a process's way out
// (the dependency records still being written): long enough for a disk
// write, short enough that a stalled file system does not hang the exit,
// where a write lost costs the next process one scan.
const CloseWait = 5 * time.Second

// WaitGroup waits until wg's count is zero or ctx is done, and reports
// whether the count reached zero. When ctx ends first, a goroutine goes on
// waiting for wg and ends with it.
func WaitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
