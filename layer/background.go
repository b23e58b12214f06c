package main

/*
#include "layer.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/keyparts"
	"github.com/kcache/kcache/internal/layerstore"
)

// On PoCL, reading a program's binary (CL_PROGRAM_BINARY_SIZES) is a
// compile: PoCL 3.1 makes a generic work-group function for every kernel of
// the program, launched or not, which made cold runs of OpenCV and clpeak
// 1.6x and 2.3x slower through the layer than without it. So for a program
// built on PoCL the layer reads no binary in the application's process:
// at the commit point where it would have read it (or at exit, where it
// may not call the driver at all), it writes a build order
// (layerstore.Order) to the cache directory and starts the background
// worker, `kcache layer-worker`, which builds the program again in a
// process of its own, at the lowest priority, keys it by its own inputs
// and stores it. A program whose binary the application read itself
// (CLBlast and clFFT keep binaries of their own) is stored in process as
// before: the read that follows is cheap.

// envWorker names the kcache command that runs the background worker; it
// comes before kcache beside the layer's library, and kcache on PATH.
const envWorker = "KCACHE_LAYER_WORKER"

// workerPoll is how often a process waiting for the worker's store looks
// for the entry: the worker's build takes a second or more.
const workerPoll = 50 * time.Millisecond

// workerRestart is how long a process waiting for a queued order lets
// pass between starts of a worker when none runs.
const workerRestart = time.Second

// workerDelay is how long after its first order a process that is still
// running starts the worker; one that exits sooner starts it at exit. The
// worker is at the lowest priority, but its start (PoCL's initialisation)
// and its compiles still share the caches and memory of a small machine
// with the application; most applications that build at start and exit
// within seconds (the benchmark's) never run beside it. A process waiting
// for an order's entry starts it at once.
const workerDelay = 10 * time.Second

// background reports whether the program's binaries are stored through
// build orders: a build (not a compile, whose object is read cheaply, nor a
// link, which the worker cannot redo from one source) for PoCL devices
// only, whose binary the application has not read. Called with p.mu held.
func (l *layer) background(p *program) bool {
	return p.bg && p.w != nil && C.kc_app_read(p.w) == 0
}

// onPoCL reports whether every slot's device is PoCL's.
func (l *layer) onPoCL(slots []*slot) bool {
	for _, s := range slots {
		if l.ids.of(s.dev).dev.Platform != keyparts.PoCL {
			return false
		}
	}
	return len(slots) > 0
}

// order hands the program's pending slots to the worker: one order per
// slot, then the slot's build lock goes (its build is counted, as not
// stored by this process). It never calls the driver, so exit may use it.
// Called with p.mu held.
func (l *layer) order(p *program) {
	ordered := false
	for _, s := range p.slots {
		if s.pending == nil {
			continue
		}
		pending := s.pending
		s.pending = nil
		key, b, err := s.encodedOrder(l)
		if err == nil {
			err = l.queue.PutEncoded(key, b)
		}
		if err != nil {
			l.warn("writing a build order", "err", err)
			pending.Abort(err)
			continue
		}
		pending.Drop("left to the background worker")
		l.mine.Store(key, true)
		l.log.Debug("kcache layer: ordered", "key", key)
		ordered = true
	}
	if ordered {
		l.scheduleWorker()
	}
}

// encodedOrder is a slot's build order, its key's digest and its bytes,
// once done is closed.
type encodedOrder struct {
	done chan struct{}
	key  kcache.Digest
	b    []byte
	err  error
}

// prepareOrders encodes the build orders of the slots still pending, on a
// goroutine of their own: a program left to the worker has its order
// written at a commit point or at the process's exit, on the
// application's thread, where the encoding (the key's digest, the order's
// JSON and checksum: GEGL's exit wrote sixteen) would otherwise be spent.
// Called before the slots are shared.
func (l *layer) prepareOrders(slots []*slot) {
	var todo []*slot
	for _, s := range slots {
		if s.pending != nil {
			s.order = &encodedOrder{done: make(chan struct{})}
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		return
	}
	go func() {
		for _, s := range todo {
			func() {
				defer close(s.order.done)
				defer func() {
					if r := recover(); r != nil {
						s.order.err = fmt.Errorf("kcache layer: encoding a build order: %v", r)
					}
				}()
				s.order.key, s.order.b, s.order.err = l.encodeOrder(s)
			}()
		}
	}()
}

// encodedOrder returns the slot's build order as prepareOrders encoded
// it, waiting for it, or encodes it now where it was not prepared.
func (s *slot) encodedOrder(l *layer) (kcache.Digest, []byte, error) {
	if s.order == nil {
		return l.encodeOrder(s)
	}
	<-s.order.done
	return s.order.key, s.order.b, s.order.err
}

// encodeOrder encodes the slot's build order: its key, source, options
// and device, and the build log the application saw.
func (l *layer) encodeOrder(s *slot) (kcache.Digest, []byte, error) {
	o := layerstore.Order{
		Key:     s.key.Digest(),
		Format:  s.key.Image.Format,
		Source:  s.key.Image.Source,
		Options: s.key.Options.Compile,
		Dir:     s.cwd,
		Env:     l.buildEnv,
		Device:  l.ids.of(s.dev).cl,
		Log:     s.log,
		PID:     os.Getpid(),
	}
	b, err := o.Encode()
	return o.Key, b, err
}

// scheduleWorker starts the worker workerDelay from now, or at exit
// (startScheduled), whichever comes first. The timer only starts a
// process, which is safe at any time, exit included: it calls no driver.
func (l *layer) scheduleWorker() {
	l.startMu.Lock()
	defer l.startMu.Unlock()
	l.toStart = true
	if l.startTimer == nil {
		l.startTimer = time.AfterFunc(workerDelay, l.startScheduled)
	}
}

// startScheduled starts the worker if orders were written since it last
// started one.
func (l *layer) startScheduled() {
	l.startMu.Lock()
	start := l.toStart
	l.toStart = false
	if l.startTimer != nil {
		l.startTimer.Stop()
		l.startTimer = nil
	}
	l.startMu.Unlock()
	if start {
		l.startWorker()
	}
}

// startWorker starts the background worker unless one holds the queue's
// lock: a running worker looks at the queue again after it lets the lock
// go, so an order written before this check is drained either way. It
// reports false when no worker runs nor could be started.
func (l *layer) startWorker() bool {
	if orders, err := l.queue.List(); err == nil && len(orders) == 0 {
		return true // drained already, by a worker another process started
	}
	if l.queue.Busy() {
		return true
	}
	bin, err := workerPath()
	if err != nil {
		l.warn("no background worker; ordered programs are not stored", "err", err)
		return false
	}
	cmd := exec.Command(bin, "layer-worker")
	cmd.Env = workerEnviron(os.Environ())
	cmd.Dir = "/"
	// A session of its own: the application's terminal signals and its
	// process group are not the worker's, which outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		l.warn("starting the background worker", "err", err)
		return false
	}
	l.log.Debug("kcache layer: started the background worker", "pid", cmd.Process.Pid, "path", bin)
	go cmd.Wait() // reaped while the application lives; init reaps it after
	return true
}

// workerEnviron is the worker's environment: the application's, without
// the layer list (the worker must not load the layer).
func workerEnviron(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "OPENCL_LAYERS=") {
			out = append(out, kv)
		}
	}
	return out
}

// workerPath finds the kcache command: KCACHE_LAYER_WORKER, else kcache
// beside the layer's library, else kcache on PATH.
func workerPath() (string, error) {
	if p := os.Getenv(envWorker); p != "" {
		return p, nil
	}
	if self := C.kc_self_path(); self != nil {
		p := filepath.Join(filepath.Dir(C.GoString(self)), "kcache")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("kcache")
	if err != nil {
		return "", errors.New("kcache layer: no kcache command beside the layer, on PATH, nor in " + envWorker)
	}
	return p, nil
}

// awaitWorker waits, holding the key's build lock, for the worker to store
// a key whose order is queued: the process that built the program before
// left it to the worker, and building it here too would build it twice.
// It returns the stored entry, or false when the worker dropped the order
// or did not store it in time (KCACHE_BUILD_WAIT): the caller then builds.
func (l *layer) awaitWorker(ctx context.Context, key *kcache.Key) (kcache.Entry, bool) {
	digest := key.Digest()
	ctx, cancel := context.WithTimeout(ctx, l.buildWait)
	defer cancel()
	var started time.Time
	for {
		queued := l.queue.Queued(digest)
		if e, err := l.disk.Get(ctx, key); err == nil {
			return e, true
		}
		if !queued {
			return kcache.Entry{}, false
		}
		if time.Since(started) >= workerRestart && !l.queue.Busy() {
			// The worker that took the order died, or never started.
			if !l.startWorker() {
				return kcache.Entry{}, false
			}
			started = time.Now()
		}
		select {
		case <-ctx.Done():
			return kcache.Entry{}, false
		case <-time.After(workerPoll):
		}
	}
}
