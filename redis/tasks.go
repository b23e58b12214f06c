package redis

import "sync"

// tasks runs the store's background operations that Close waits for: lease
// releases and expiry renewals. A WaitGroup alone must not gain a task
// while Close waits on it, so tasks refuses new ones once Wait has begun;
// what is refused (a lease release after Close) is left to expire.
type tasks struct {
	mu     sync.Mutex
	closed bool // protected by mu
	wg     sync.WaitGroup
}

// Go runs f in a goroutine, unless Wait has begun.
func (t *tasks) Go(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.wg.Go(f)
	}
}

// Wait stops taking tasks and waits for those running.
func (t *tasks) Wait() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}
