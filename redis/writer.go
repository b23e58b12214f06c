package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kcache/kcache"
)

// job is one queued write.
type job struct {
	digest kcache.Digest
	rec    []byte // the key's canonical encoding
	entry  kcache.Entry
	value  []byte        // the encoded value, when encoded on enqueue; else nil
	cost   int64         // the bytes it holds against Options.QueueBytes
	done   chan struct{} // closed once the write is over, sent or not
}

// writerCount is how many writes run at once: enough to overlap a large
// value's compression with another's transfer, few enough to leave the
// process's cores to its builds.
const writerCount = 2

// writer sends queued writes in the background. Its queue is bounded in
// entries and bytes; a write that does not fit is dropped and counted,
// since a build's caller must never wait on the remote tier. A binary is
// charged its own length, an upper bound of its value's (the writers
// compress it), except one that would not fit that way: it is encoded at
// once and charged what it will hold, so that a large binary that
// compresses well (300 MiB of zeros is 34 KB) is sent rather than dropped.
type writer struct {
	s      *Store
	queue  chan job
	bytes  atomic.Int64 // binary bytes queued
	ctx    context.Context
	cancel context.CancelFunc // ends writes in flight when a flush runs out
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool                            // protected by mu; no more enqueues
	pending map[kcache.Digest]chan struct{} // protected by mu: writes queued or in flight
}

func newWriter(s *Store) *writer {
	w := &writer{s: s, queue: make(chan job, s.opts.QueueSize), pending: map[kcache.Digest]chan struct{}{}}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	for range writerCount {
		w.wg.Go(w.run)
	}
	return w
}

// enqueue queues j, or drops it when the queue is full or closed.
func (w *writer) enqueue(j job) {
	j.cost = int64(len(j.entry.Binary))
	if w.bytes.Load()+j.cost > w.s.opts.QueueBytes && w.open() && j.cost <= maxBinary {
		j.value = w.s.codec.encode(j.digest, j.rec, j.entry)
		j.cost, j.entry.Binary = int64(len(j.value)), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.bytes.Load()+j.cost > w.s.opts.QueueBytes {
		w.drop(j, "queue full or closed")
		return
	}
	j.done = make(chan struct{})
	select {
	case w.queue <- j:
		w.bytes.Add(j.cost)
		w.pending[j.digest] = j.done
	default:
		w.drop(j, "queue full")
	}
}

// open reports whether the writer takes writes and the server is not
// being skipped: only then is a value worth encoding on the caller's time.
func (w *writer) open() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.closed && w.s.brk.allow() == nil
}

// drop counts a write not queued.
func (w *writer) drop(j job, why string) {
	w.s.dropped.Add(1)
	w.s.log.Debug("kcache: remote write dropped: "+why, "key", j.digest, "bytes", j.cost)
}

// written returns a channel closed once no write of digest is queued or in
// flight.
func (w *writer) written(d kcache.Digest) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.pending[d]; ok {
		return ch
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

func (w *writer) run() {
	for j := range w.queue {
		w.write(j)
		w.bytes.Add(-j.cost)
		w.mu.Lock()
		if w.pending[j.digest] == j.done {
			delete(w.pending, j.digest)
		}
		w.mu.Unlock()
		close(j.done)
	}
}

// write sends one value. A failure is counted and feeds the breaker; the
// value is lost, which costs a build somewhere later, nothing more.
func (w *writer) write(j job) {
	s := w.s
	if s.brk.allow() != nil || w.ctx.Err() != nil {
		s.dropped.Add(1) // the server is being skipped, or the flush ran out
		return
	}
	v := j.value
	if v == nil {
		v = s.codec.encode(j.digest, j.rec, j.entry)
	}
	ctx, cancel := context.WithTimeout(w.ctx, s.opts.WriteTimeout)
	defer cancel()
	// NX: a value already there is kept. It is another machine's build of
	// the same key, or one a reader rejects, and a reader removes those
	// itself (Store.discard), by compare-and-delete: a write must not
	// replace a value it has not checked.
	set, err := s.client.SetNX(ctx, s.names.value(j.digest), v, s.opts.TTL).Result()
	if err == nil {
		s.brk.succeed()
		if !set {
			s.existed.Add(1)
		}
		return
	}
	s.errors.Add(1)
	if isTimeout(err) {
		s.timeouts.Add(1)
	}
	err = s.failed("put", err, s.opts.WriteTimeout)
	s.log.Debug("kcache: remote write failed", "key", j.digest, "err", err)
}

// close stops taking writes and sends what is queued, until ctx ends; then
// it abandons the rest.
func (w *writer) close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		// Queued writes are skipped from now on. A write in flight may be
		// blocked on a hung server past the cancel: it is not waited for,
		// and ends when the store closes its connections.
		left := len(w.queue)
		w.cancel()
		return fmt.Errorf("redis: flush of queued writes unfinished, %d dropped: %w", left, ctx.Err())
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
