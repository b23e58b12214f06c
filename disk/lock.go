package disk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kcache/kcache"
)

// Locks. Each is an flock(2) on an open file description, which the kernel
// drops when the descriptor is closed, so a holder killed at any instant
// leaves nothing locked. No lock is a file whose mere existence means
// "locked".
//
//	what               held by                    while
//	<leaf>/lock        a builder (Store.Lock)     the build, then its Put
//	<leaf> (dir)       a writer, remover, step    one entry's slot choice, renames or removal; one listing
//	shards/<xx>        writers (shared), a step   one journal append; a step's swap of the journal
//	shards/size        whoever changes a total    one read-modify-write
//	shards/steps.lock  a step (byte <xx>)         one step through the shard; taken without waiting
//	evict.lock         the maintenance pass       one pass; taken without waiting
//
// Readers take no lock: files appear only by rename, and a record is renamed
// into place after its binary, so a reader sees a whole entry, no entry, or
// a record and binary that disagree, which fails the checksum and is a miss.
//
// Locks are taken in the order of the table's first four rows, top to
// bottom, and every wait is bounded: a lock is tried without blocking and
// retried with backoff until it is free, the context ends or the wait runs
// out, and then the caller goes on without it.
//
// A file system that refuses flock (NFS refuses it on a directory opened
// read-only, some FUSE file systems refuse it everywhere) makes every lock
// fail the same way. The store then logs one warning and goes on without
// locks: readers check every entry, so nothing wrong is ever served, but
// two processes may build the same key at once and the totals may drift
// until the next step recounts them.

// Backoff between tries of a busy lock.
const (
	// minBackoff is the first pause. Short locks (a rename, a counter
	// update) are held for tens of microseconds, so the first retry comes
	// soon.
	minBackoff = time.Millisecond
	// maxBackoff caps the pause for a build lock, and so the delay between
	// a release and the waiter noticing: against builds of tenths of a
	// second and more, 50 ms is small, and 20 tries a second cost nothing.
	maxBackoff = 50 * time.Millisecond
	// maxShortBackoff caps the pause for the short locks of writes (a leaf,
	// a journal, the size file), held for microseconds: with eight writers
	// taking the size file's lock in turn, a longer pause made a waiter miss
	// free moments over and over, and its Put wait half a second.
	maxShortBackoff = 2 * time.Millisecond
	// maxRelock bounds how often a lock is retaken because its file or
	// directory was removed between the open and the lock. Each retry means
	// a remover got there first; more than a few in a row means something is
	// deleting the tree, and the caller is better off without the lock.
	maxRelock = 8
)

// Lock takes the build lock of key: cross-process single-flight. It blocks
// until the caller holds the lock, ctx ends, or Options.BuildWait runs out
// (then the error wraps ErrLockTimeout). unlock releases it and is safe to
// call more than once; it is never nil, so a caller may defer it even after
// an error. If the holder dies the kernel releases the lock.
//
// The protocol, as the caller (kcache.Cache) runs it:
//
//	Get               hit: done
//	miss -> Lock      waits while another process builds the same key
//	Get again         hit: another process built it while we waited
//	miss -> build -> Put -> unlock
//
// If Lock fails the caller builds anyway: single-flight saves work and
// never gates correctness, since Put of the same key twice is harmless. A
// key the size limits keep out of the cache is never waited for: its lock
// returns at once.
func (s *Store) Lock(ctx context.Context, key *kcache.Key) (unlock func(), err error) {
	if !s.admits(key) {
		return func() {}, nil
	}
	leaf := s.leafDir(s.digests(key))
	if err := s.checkTree(leaf, nil); err != nil {
		return func() {}, fmt.Errorf("disk: build lock: %w", err)
	}
	f, err := s.lockPath(ctx, leaf+"/"+lockName, s.openLockFile, leaf, s.opts.BuildWait)
	if err != nil {
		return func() {}, fmt.Errorf("disk: build lock: %w", err)
	}
	return closer(f), nil
}

// lockLeaf takes the lock on a leaf directory, creating the directory if
// create is set. A directory that does not exist and is not to be created
// gives an error wrapping fs.ErrNotExist; a leaf reached through a symbolic
// link, one wrapping errNotInTree (checkTree). Every write and removal
// in a leaf happens under this lock, so none acts outside the cache.
func (s *Store) lockLeaf(ctx context.Context, leaf string, create bool, wait time.Duration) (unlock func(), err error) {
	mkdir := ""
	if create {
		mkdir = leaf
		// Before the directories are made: through a link, they would be
		// made wherever it points.
		if err := s.checkTree(leaf, nil); err != nil {
			return nil, err
		}
	}
	f, err := s.lockPath(ctx, leaf, openDir, mkdir, wait)
	if err != nil {
		return nil, err
	}
	if err := s.checkTree(leaf, f); err != nil {
		f.Close()
		return nil, err
	}
	return closer(f), nil
}

// errNotInTree says a leaf's path goes through something that is not a
// directory of the cache: a symbolic link planted in the layout (to
// another cache, to /), which the store never makes.
var errNotInTree = errors.New("disk: a directory of the cache's layout is a symbolic link or not a directory")

// checkTree reports whether leaf is a directory of the tree itself: every
// level below the version directory a directory, not a symbolic link.
// With f, the leaf open and locked, it must be the directory f holds;
// without, levels not made yet pass. A pass that followed a link planted
// in the layout would remove, as a dead writer's, the temporary files,
// binaries without records and build locks of the directory it names, and
// age out the entries there: another cache's, or any directory's.
func (s *Store) checkTree(leaf string, f *os.File) error {
	rel, ok := strings.CutPrefix(leaf, s.dir+"/")
	if !ok {
		return fmt.Errorf("%w: %s", errNotInTree, leaf)
	}
	p := s.dir
	var last os.FileInfo
	for part := range strings.SplitSeq(rel, "/") {
		p += "/" + part
		fi, err := os.Lstat(p)
		if f == nil && errors.Is(err, fs.ErrNotExist) {
			return nil // made by the caller, as a directory
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%w: %s", errNotInTree, p)
		}
		last = fi
	}
	if f == nil {
		return nil
	}
	held, err := f.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(held, last) {
		return fmt.Errorf("%w: %s changed while locked", errNotInTree, leaf)
	}
	return nil
}

// lockFile takes the lock on a file of the version directory (evict.lock),
// creating it if needed.
func (s *Store) lockFile(ctx context.Context, name string, wait time.Duration) (*os.File, error) {
	return s.lockPath(ctx, s.dir+"/"+name, s.openLockFile, "", wait)
}

// openDir opens the directory at path. O_DIRECTORY refuses anything else
// before it is opened: a FIFO planted where a leaf goes would otherwise
// keep the open waiting for a writer. O_NOFOLLOW refuses a leaf that is a
// symbolic link (checkTree checks the levels above).
func openDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
}

// closer returns a function that closes f once; closing drops its flock.
func closer(f *os.File) func() {
	var once sync.Once
	return func() { once.Do(func() { f.Close() }) }
}

func (s *Store) openLockFile(path string) (*os.File, error) {
	return s.modes.openFile(path, os.O_RDWR|os.O_CREATE)
}

// lockPath opens path and holds an exclusive flock on it within wait.
func (s *Store) lockPath(ctx context.Context, path string, open func(string) (*os.File, error), mkdir string, wait time.Duration) (*os.File, error) {
	return s.lockPathMode(ctx, path, open, mkdir, wait, false)
}

// lockPathMode opens path and holds a flock on it, shared or exclusive,
// within wait. It creates mkdir first when that is set. A remover unlinks a
// lock file or directory only while holding its lock, so a waiter can win
// the lock on something already unlinked; lockPathMode then starts over on
// what the path names now. Where the file system refuses flock, it warns
// once and returns the file unlocked.
func (s *Store) lockPathMode(ctx context.Context, path string, open func(string) (*os.File, error), mkdir string, wait time.Duration, shared bool) (*os.File, error) {
	deadline := time.Now().Add(wait) // real time: waits are real even under a test clock
	for attempt := 0; ; attempt++ {
		f, err := s.modes.openFor(path, open, mkdir)
		if errors.Is(err, fs.ErrNotExist) && mkdir != "" && attempt < maxRelock {
			continue // a remover took the directory between mkdir and open
		}
		if err != nil {
			return nil, err
		}
		err = s.flockWait(ctx, f, time.Until(deadline), shared)
		if errors.Is(err, errNoFlock) {
			s.warnNoFlock(err)
			return f, nil
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		if linked(f, path) {
			return f, nil
		}
		f.Close()
		if attempt >= maxRelock {
			return nil, fmt.Errorf("%w: %s keeps being removed", ErrLockTimeout, path)
		}
	}
}

// errNoFlock marks a file system that refuses flock.
var errNoFlock = errors.New("disk: file system refuses flock")

// warnNoFlock logs, once per store, that locks are off.
func (s *Store) warnNoFlock(err error) {
	s.noFlock.Do(func() {
		s.log.Warn("kcache: the cache's file system refuses file locks; going on without them "+
			"(entries are still checked, but processes may build the same kernel at once)", "dir", s.root, "err", err)
	})
}

func (m modes) openFor(path string, open func(string) (*os.File, error), mkdir string) (*os.File, error) {
	if mkdir != "" {
		if err := m.mkdirAll(mkdir); err != nil {
			return nil, err
		}
	}
	return open(path)
}

// linked reports whether path still names the file f has open.
func linked(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// flockWait takes a flock on f, trying without blocking and retrying with
// jittered exponential backoff. A blocking flock could not be abandoned
// when ctx ends or the wait runs out: the goroutine would stay in the
// kernel until the holder let go. wait <= 0 means one try.
func (s *Store) flockWait(ctx context.Context, f *os.File, wait time.Duration, shared bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fd := int(f.Fd())
	deadline := time.Now().Add(wait)
	delay, maxDelay := minBackoff/4, maxShortBackoff
	if wait > s.opts.LockTimeout {
		delay, maxDelay = minBackoff, maxBackoff // a build lock
	}
	for {
		err := s.flockNB(fd, shared)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return &fs.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w: %s", ErrLockTimeout, f.Name())
		}
		// Jitter keeps processes that started waiting together from
		// retrying in lockstep.
		pause := min(delay/2+rand.N(delay/2+1), left)
		if err := sleep(ctx, pause); err != nil {
			return err
		}
		delay = min(2*delay, maxDelay)
	}
}

// flockNB tries a flock once. An error saying the file system does not do
// flock at all wraps errNoFlock.
func (s *Store) flockNB(fd int, shared bool) error {
	how := unix.LOCK_EX | unix.LOCK_NB
	if shared {
		how = unix.LOCK_SH | unix.LOCK_NB
	}
	for {
		err := s.flock(fd, how)
		switch {
		case err == unix.EINTR:
			continue
		case err == nil, err == unix.EWOULDBLOCK:
			return err
		case noFlock(err):
			return fmt.Errorf("%w: %w", errNoFlock, err)
		}
		return err
	}
}

// noFlock reports whether a flock error means the file system does not
// lock: NFS gives ENOLCK without a lock manager and EBADF for a directory
// opened read-only (its flock is a POSIX write lock underneath); others
// give EOPNOTSUPP, ENOSYS or EINVAL.
func noFlock(err error) bool {
	for _, e := range [...]error{unix.ENOLCK, unix.EBADF, unix.EOPNOTSUPP, unix.ENOTSUP, unix.ENOSYS, unix.EINVAL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
