package disk

import (
	"context"
	"sync"
	"sync/atomic"
)

// workCounts counts what this process's background work did, for the
// benchmarks.
type workCounts struct {
	steps    atomic.Int64 // steps run
	stepTime atomic.Int64 // nanoseconds spent in them
	evicted  atomic.Int64 // entries they evicted
}

// background is the state of a store's background goroutine.
type background struct {
	mu      sync.Mutex // protects the fields below
	running bool
	kicked  bool          // more work arrived while running
	closed  bool          // Close was called: start nothing more
	done    chan struct{} // closed when the running goroutine exits
	cancel  context.CancelFunc
}

// afterWrite starts the background work a write calls for: eviction if the
// cache (total bytes, -1 when unknown) is over MaxSize, a recount if some
// shard's total is unknown, the maintenance pass if it is due.
func (s *Store) afterWrite(total int64, unknown int) {
	if unknown > 0 || (s.limited() && total > s.maxSize()) || s.trimDue() {
		s.kick()
	}
}

// kick makes sure the background goroutine runs and looks for work again.
func (s *Store) kick() {
	b := &s.bg
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return
	case b.running:
		b.kicked = true
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.running, b.done, b.cancel = true, make(chan struct{}), cancel
	go s.run(ctx, b.done)
}

// run does background work until there is none left.
func (s *Store) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	b := &s.bg
	for {
		s.work(ctx)
		b.mu.Lock()
		if b.kicked && !b.closed && ctx.Err() == nil {
			b.kicked = false
			b.mu.Unlock()
			continue
		}
		b.running = false
		b.cancel()
		b.mu.Unlock()
		return
	}
}

// Close waits for the background work this process is doing (an eviction
// step, the maintenance pass) to finish, until ctx ends; then it stops the
// work where it is, which leaves the cache consistent, and returns ctx's
// error. After Close the store still serves Get, Put and the rest, but
// starts no background work: the next writer of another process does it.
// A process that never calls Close loses nothing: what eviction did not do
// stays on disk for the next writer.
func (s *Store) Close(ctx context.Context) error {
	s.flushRefused(ctx, true)
	b := &s.bg
	b.mu.Lock()
	b.closed = true
	done, cancel := b.done, b.cancel
	b.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		cancel()
		<-done // steps check ctx between leaves: this is short
		return ctx.Err()
	}
}

// wait waits until the background goroutine is idle, or ctx ends.
func (s *Store) wait(ctx context.Context) error {
	s.bg.mu.Lock()
	done := s.bg.done
	s.bg.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// work does what the cache needs now: the maintenance pass if due, a
// recount of unknown totals, eviction down to the target if over MaxSize.
func (s *Store) work(ctx context.Context) {
	s.forgetOwed(ctx)
	if s.trimDue() {
		s.trim(ctx, s.now())
	}
	t := s.readTotals(ctx)
	total, unknown := t.total()
	switch {
	case unknown == shardCount:
		// No size file: a new cache, or one written before shards. Only a
		// walk finds what it holds.
		_ = s.fullPass(ctx, passOptions{})
	case unknown > 0:
		for x := range shardCount {
			if !t.known[x] && ctx.Err() == nil {
				_, _, _ = s.step(ctx, []int{x}, false, stepPlan{}, nil)
			}
		}
	}
	s.lastTotal.Store(total)
	if s.limited() {
		s.evictToTarget(ctx)
	}
}
