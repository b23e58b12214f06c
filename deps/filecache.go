package deps

import (
	"bytes"
	"crypto/sha256"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/kcache/kcache"
	"golang.org/x/sys/unix"
)

// tooNew is how recent a change must be for a file's identity not to be
// trusted: a file written twice within one timestamp tick keeps its size,
// mtime and ctime (file systems with 1 s or 2 s timestamps exist). ccache
// re-reads such "too new" files; so does deps.
const tooNew = 2 * time.Second

// identity is what a stat says about a file's content: equal identities
// mean unchanged content, provided the file was not too new when it was
// read (see settled). The ctime catches a same-length edit whose mtime
// was set back; the device and inode, a file replaced by another. Times
// are Unix nanoseconds, so that identities compare as plain values and
// travel in dependency records unchanged.
type identity struct {
	size  int64
	mtime int64
	ctime int64
	inode uint64
	dev   uint64
}

func identityOf(fi fs.FileInfo) identity {
	id := identity{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.inode, id.dev = st.Ino, uint64(st.Dev)
		id.ctime = st.Ctim.Nano()
	}
	return id
}

// settled reports whether a file of this identity, read or listed at
// time at, could not have changed again within the same timestamp tick:
// its last change was more than tooNew before. What was read while not
// settled is never trusted later by stat alone, however long ago that
// was: the file may have been rewritten within the tick after the read.
func (id identity) settled(at time.Time) bool {
	return at.UnixNano()-max(id.mtime, id.ctime) > int64(id.window())
}

// window is how long after its last change a file of this identity is
// too new to be trusted by stat.
func (id identity) window() time.Duration {
	if id.mtime%int64(time.Second) != 0 && id.ctime%int64(time.Second) != 0 {
		// Timestamps finer than a second come from the kernel's coarse
		// clock, whose tick is at most 10 ms; a whole second in either
		// may be a file system that keeps seconds (or two).
		return fineTooNew
	}
	return tooNew
}

// fineTooNew is tooNew on a file system whose timestamps are finer than a
// second: twice the longest tick of the kernel's coarse clock (HZ=100).
const fineTooNew = 20 * time.Millisecond

// maxFileEntries bounds the files remembered: a million headers' digests
// and directives would hold hundreds of megabytes.
const maxFileEntries = 200_000

// fileEntry is what the cache knows of one file.
type fileEntry struct {
	id     identity
	digest kcache.Digest
	parsedFile
	// settled says the file was settled when it was read: only then may
	// a later stat with the same identity stand for the content.
	settled bool
}

// fileKey names a file's entry: its parse depends on the lexing mode.
type fileKey struct {
	path string
	mode lexMode
}

// lexMode is how the compiler lexes a file, as far as the scan knows:
// whether it replaces trigraphs, and whether it lexes C only (no C++
// raw strings or digit separators), C++14 or later only (both), or
// either (neither set).
type lexMode struct {
	tri   Trigraphs
	onlyC bool
	cpp   bool
}

// fileCache maps absolute paths to their last seen identity, digest and
// parsed directives: ccache's direct mode, which turns a warm scan into a
// stat per file.
type fileCache struct {
	mu      sync.Mutex
	entries map[fileKey]*fileEntry // guarded by mu; entries are immutable
}

func newFileCache() *fileCache { return &fileCache{entries: map[fileKey]*fileEntry{}} }

// get returns the entry of path, whose stat is fi, reading the file only
// when it is new, changed, or was not settled when last read.
func (c *fileCache) get(fsys *fileSystem, path string, fi fs.FileInfo, mode lexMode) (*fileEntry, error) {
	id := identityOf(fi)
	k := fileKey{path, mode}
	c.mu.Lock()
	e := c.entries[k]
	c.mu.Unlock()
	if e != nil && e.settled && e.id == id {
		return e, nil
	}
	content, err := fsys.readFile(path)
	if err != nil {
		return nil, err
	}
	e = &fileEntry{id: id, digest: sha256.Sum256(content), parsedFile: parseFile(content, mode), settled: id.settled(fsys.now())}
	c.mu.Lock()
	if len(c.entries) >= maxFileEntries {
		// Forgetting costs one read per file on the next scan; holding
		// every file ever seen would grow without bound.
		clear(c.entries)
	}
	c.entries[k] = e
	c.mu.Unlock()
	return e, nil
}

// fileSystem is the scanner's access to files, a field so tests can count
// what a scan does.
type fileSystem struct {
	// stat is os.Stat where nil: checks of what a memo observed then
	// take rawObserve's system call, which allocates no fs.FileInfo.
	stat     func(string) (fs.FileInfo, error)
	readFile func(string) ([]byte, error)
	readDir  func(string) ([]os.DirEntry, error)
	now      func() time.Time
}

func osFileSystem() *fileSystem {
	return &fileSystem{readFile: os.ReadFile, readDir: os.ReadDir, now: time.Now}
}

// sameContent reports whether the file at path holds exactly want. It
// reads through a buffer of its own (compareBufSize) and stops at the
// first difference: a file whose bytes a caller holds already costs no
// memory of its own.
func sameContent(path string, want []byte) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, compareBufSize)
	for {
		n, err := io.ReadFull(f, buf)
		if n > len(want) || !bytes.Equal(buf[:n], want[:n]) {
			return false, nil
		}
		want = want[n:]
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return len(want) == 0, nil
		case err != nil:
			return false, err
		}
	}
}

// compareBufSize is sameContent's buffer: 64 KiB, sixteen pages.
const compareBufSize = 64 << 10

// statFile stats path for a scan, which needs its fs.FileInfo.
func (fsys *fileSystem) statFile(path string) (fs.FileInfo, error) {
	if fsys.stat == nil {
		return os.Stat(path)
	}
	return fsys.stat(path)
}

// observe stats path for a check of a memo, at time now.
func (fsys *fileSystem) observe(path string, now time.Time) observation {
	if fsys.stat == nil {
		return rawObserve(path, now)
	}
	fi, err := fsys.stat(path)
	return observe(path, fi, err, now)
}

// rawObserve is observe of os.Stat(path) by the same system call (stat
// follows symbolic links: fstatat of the working directory, as os.Stat
// makes it), into a Stat_t on the stack and with no allocation
// (fstatat): a new process's first key checks a record of thousands of
// places, and os.Stat's fs.FileInfo was a quarter of each check's time
// on the 2-core machine (TestRawObserveIsObserve pins the equivalence).
func rawObserve(path string, now time.Time) observation {
	var st unix.Stat_t
	err := fstatat(unix.AT_FDCWD, path, &st)
	for err == unix.EINTR { // as os.Stat retries
		err = fstatat(unix.AT_FDCWD, path, &st)
	}
	return observed(path, uint32(st.Mode), statIdentity(&st), err, now)
}

// statIdentity is identityOf for a Stat_t.
func statIdentity(st *unix.Stat_t) identity {
	return identity{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), inode: st.Ino, dev: uint64(st.Dev)}
}
