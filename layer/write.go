package main

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/ctxwait"
)

// writes are the stores under way on goroutines of the layer's. A
// program's binary is read from the driver on the application's thread,
// where the driver is alive; its entry is encoded and written beside the
// application, which would otherwise wait for it (a fifth of a second for
// each of hashcat's 5 MB programs on a 2-core machine). The process waits
// for them at exit, which calls no driver.
type writes struct {
	cur atomic.Pointer[writeSet]
}

// writeSet is one process's writes under way: a forked child starts a set
// of its own, since its parent's goroutines do not run in it.
type writeSet struct {
	pid int
	wg  sync.WaitGroup
}

// set returns this process's set.
func (w *writes) set() *writeSet {
	pid := os.Getpid()
	for {
		s := w.cur.Load()
		if s != nil && s.pid == pid {
			return s
		}
		if n := (&writeSet{pid: pid}); w.cur.CompareAndSwap(s, n) {
			return n
		}
	}
}

// commit stores bin as pending's entry on a goroutine; the build lock is
// held until it is written.
func (w *writes) commit(ctx context.Context, pending *kcache.Pending, bin []byte, took time.Duration) {
	s := w.set()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		pending.Commit(context.WithoutCancel(ctx), bin, took)
	}()
}

// wait waits for this process's writes under way, until ctx is done, and
// reports whether they all finished.
func (w *writes) wait(ctx context.Context) bool {
	return ctxwait.WaitGroup(ctx, &w.set().wg)
}
