package deps

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/kcache/kcache"
)

// tooNew is how recent a modification must be for a file's identity not
// to be trusted: a file written twice within one timestamp tick keeps its
// size and mtime. ccache re-reads such "too new" files; so does deps.
const tooNew = 2 * time.Second

// identity is what a stat says about a file's content: equal identities
// mean unchanged content, unless the mtime is too new.
type identity struct {
	size  int64
	mtime time.Time
	inode uint64
	dev   uint64
}

func identityOf(fi fs.FileInfo) identity {
	id := identity{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.inode, id.dev = st.Ino, uint64(st.Dev)
	}
	return id
}

// trusted reports whether a cached entry of identity was may stand for a
// file whose stat now says is.
func (was identity) trusted(is identity, now time.Time) bool {
	return was == is && now.Sub(is.mtime) > tooNew
}

// maxFileEntries bounds the files remembered: a million headers' digests
// and directives would hold hundreds of megabytes.
const maxFileEntries = 200_000

// fileEntry is what the cache knows of one file.
type fileEntry struct {
	id         identity
	digest     kcache.Digest
	directives []directive
	computed   bool // has a directive whose operand must be expanded
}

// fileCache maps absolute paths to their last seen identity, digest and
// parsed directives: ccache's direct mode, which turns a warm scan into a
// stat per file.
type fileCache struct {
	mu      sync.Mutex
	entries map[string]*fileEntry // guarded by mu; entries are immutable
}

func newFileCache() *fileCache { return &fileCache{entries: map[string]*fileEntry{}} }

// get returns the entry of path, whose stat is fi, reading the file only
// when it is new or changed.
func (c *fileCache) get(fsys *fileSystem, path string, fi fs.FileInfo) (*fileEntry, error) {
	id := identityOf(fi)
	c.mu.Lock()
	e := c.entries[path]
	c.mu.Unlock()
	if e != nil && e.id.trusted(id, fsys.now()) {
		return e, nil
	}
	content, err := fsys.readFile(path)
	if err != nil {
		return nil, err
	}
	e = &fileEntry{id: id, digest: sha256.Sum256(content), directives: parseDirectives(content)}
	for _, d := range e.directives {
		e.computed = e.computed || d.operand != nil
	}
	c.mu.Lock()
	if len(c.entries) >= maxFileEntries {
		// Forgetting costs one read per file on the next scan; holding
		// every file ever seen would grow without bound.
		clear(c.entries)
	}
	c.entries[path] = e
	c.mu.Unlock()
	return e, nil
}

// fileSystem is the scanner's access to files, a field so tests can count
// what a scan does.
type fileSystem struct {
	stat     func(string) (fs.FileInfo, error)
	readFile func(string) ([]byte, error)
	readDir  func(string) ([]os.DirEntry, error)
	now      func() time.Time
}

func osFileSystem() *fileSystem {
	return &fileSystem{stat: os.Stat, readFile: os.ReadFile, readDir: os.ReadDir, now: time.Now}
}
