package layerstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kcache/kcache"
)

// Queue is one user's build orders for one cache directory, in its
// directory layer-orders-UID (beside the disk tier's version directory,
// which never sees it), and the lock its one worker holds while it drains
// them. Each user has a queue of their own, mode 0700, even in a cache
// shared by a group: an order carries its process's environment and
// working directory, and a worker builds in them, so a worker must never
// take another user's orders.
//
// An order's file is named after its key's digest: processes that order
// the same build write one file, and the worker builds it once. Files are
// written whole under a temporary name and renamed, so a reader sees a
// whole order or none; one that is damaged anyway (a full disk, a bad
// sector) fails DecodeOrder and is removed.
type Queue struct {
	dir string
}

// Names in the queue's directory.
const (
	queueDirName = "layer-orders-" // and the user's id
	orderSuffix  = ".order"
	lockFileName = "worker.lock"
	tempPrefix   = ".tmp-"
)

// staleTemp is how old a temporary file must be before the worker removes
// it as a dead writer's: a live one renames its file within milliseconds.
const staleTemp = time.Hour

// NewQueue returns the queue of the cache directory root.
func NewQueue(root string) Queue {
	return Queue{dir: filepath.Join(root, queueDirName+strconv.Itoa(os.Getuid()))}
}

// Dir returns the queue's directory.
func (q Queue) Dir() string { return q.dir }

func (q Queue) path(d kcache.Digest) string { return filepath.Join(q.dir, d.String()+orderSuffix) }

// Put writes o to the queue, replacing an order of the same key.
func (q Queue) Put(o Order) error {
	b, err := o.Encode()
	if err != nil {
		return err
	}
	return q.PutEncoded(o.Key, b)
}

// PutEncoded writes an order encoded already (Order.Encode) for the key
// digest d, replacing an order of the same key: a process encodes its
// orders while it runs and writes them at its commit points or exit.
func (q Queue) PutEncoded(d kcache.Digest, b []byte) error {
	if err := q.makeDir(); err != nil {
		return fmt.Errorf("kcache layer: build orders: %w", err)
	}
	f, err := os.CreateTemp(q.dir, tempPrefix)
	if err != nil {
		return fmt.Errorf("kcache layer: build orders: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), q.path(d))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("kcache layer: writing a build order: %w", err)
	}
	return nil
}

// Queued reports whether an order for the key digest d waits in the queue.
func (q Queue) Queued(d kcache.Digest) bool {
	_, err := os.Stat(q.path(d))
	return err == nil
}

// ErrQueueUnsafe says the queue's directory is not this user's alone: in
// a cache shared by a group, another member may have made it before this
// user did. Nothing is queued there nor taken from it: an order carries
// its process's environment, which the other member could read, and the
// worker builds in an order's environment, which the other member could
// write.
var ErrQueueUnsafe = errors.New("kcache layer: the build orders' directory is not this user's alone")

// makeDir makes the queue's directory if it is missing and checks it.
func (q Queue) makeDir() error {
	if err := os.MkdirAll(q.dir, 0o700); err != nil {
		return err
	}
	return q.checkDir()
}

// checkDir reports whether the queue's directory, which exists, is this
// user's alone: a directory (not a symbolic link), owned by this user,
// that no one else may enter.
func (q Queue) checkDir() error {
	fi, err := os.Lstat(q.dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%w: %s (mode %v)", ErrQueueUnsafe, q.dir, fi.Mode())
	}
	return nil
}

// List returns the paths of the queued orders, oldest first.
func (q Queue) List() ([]string, error) {
	if err := q.checkDir(); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("kcache layer: build orders: %w", err)
	}
	ents, err := os.ReadDir(q.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kcache layer: build orders: %w", err)
	}
	type file struct {
		path string
		mod  time.Time
	}
	var files []file
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		name := e.Name()
		switch {
		case strings.HasSuffix(name, orderSuffix) && info.Mode().IsRegular():
			files = append(files, file{filepath.Join(q.dir, name), info.ModTime()})
		case strings.HasPrefix(name, tempPrefix) && time.Since(info.ModTime()) > staleTemp:
			os.Remove(filepath.Join(q.dir, name)) // a dead writer's; best effort
		}
	}
	slices.SortFunc(files, func(a, b file) int { return a.mod.Compare(b.mod) })
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.path
	}
	return out, nil
}

// Read reads and decodes the order at path (one List returned).
func (q Queue) Read(path string) (Order, error) {
	f, err := os.Open(path)
	if err != nil {
		return Order{}, fmt.Errorf("kcache layer: reading a build order: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxOrder+1))
	if err != nil {
		return Order{}, fmt.Errorf("kcache layer: reading a build order: %w", err)
	}
	return DecodeOrder(b)
}

// Remove removes the order at path; an order already gone is no error.
func (q Queue) Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("kcache layer: removing a build order: %w", err)
	}
	return nil
}

// TryLock takes the worker lock if no other process holds it: ok false
// means another worker is draining the queue. The lock is a flock on a
// file of the queue's directory, so the kernel releases it when its holder
// dies, SIGKILL included.
func (q Queue) TryLock() (unlock func(), ok bool, err error) {
	if err := q.makeDir(); err != nil {
		return nil, false, fmt.Errorf("kcache layer: worker lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(q.dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("kcache layer: worker lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("kcache layer: worker lock: %w", err)
	}
	return func() { f.Close() }, true, nil
}

// Busy reports whether a worker holds the lock now.
func (q Queue) Busy() bool {
	unlock, ok, err := q.TryLock()
	if ok {
		unlock()
	}
	return !ok && err == nil
}

// Wait waits until the queue is empty and no worker runs, or ctx ends: a
// benchmark waits so for a cold run's background stores before its warm
// runs, and so do the layer's tests.
func (q Queue) Wait(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		orders, err := q.List()
		if err != nil {
			return err
		}
		if len(orders) == 0 && !q.Busy() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kcache layer: waiting for the background worker: %w", context.Cause(ctx))
		case <-tick.C:
		}
	}
}
