package compileserver

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kcache/kcache/deps"
)

// settle is how long after a file's last change its stat identity may be
// trusted to stand for its content: a write within one timestamp tick of
// the check could leave size and mtime unchanged. 2 s covers the coarsest
// timestamps of the file systems kcache meets (FAT's), as ccache's "file
// too new" rule does.
const settle = 2 * time.Second

// fileChecker checks a request's files, remembering each file's digest by
// its stat identity so that a warm check costs a stat per file.
type fileChecker struct {
	mu    sync.Mutex
	known map[string]fileState // by path; guarded by mu
	now   func() time.Time
	// settle is the margin checkSince asks between a file's last change
	// and the start of a compile: the package's settle; tests narrow it.
	settle time.Duration
}

// fileState is a file's identity when its content was hashed.
type fileState struct {
	size, mtime, ctime int64
	ino, dev           uint64
	digest             [32]byte
	settled            bool // changed longer than settle before it was hashed
	// seen is when this identity was first seen at the path: checkSince
	// trusts only what it saw before a compile began.
	seen time.Time
}

func newFileChecker() fileChecker {
	return fileChecker{known: map[string]fileState{}, now: time.Now, settle: settle}
}

// check returns why a file differs from what the request asserts, or "".
func (fc *fileChecker) check(files []File) string {
	why, _ := eachFile(files, func(f File) (string, string) { return fc.checkOne(f), "" })
	return why
}

// Bounds of eachFile: a CCCL kernel's key names 360-780 files and places
// that must stay absent, each a stat or more, which the server checks on
// the way to its answer; run one after another they took milliseconds.
const (
	// checkChunk is how many files one goroutine takes at a time: enough
	// that handing out work costs nothing beside the stats.
	checkChunk = 64
	// checkWorkers bounds the goroutines of one check, as the dependency
	// scanner's check of its memo does: past 16, stats only contend for
	// the same kernel locks.
	checkWorkers = 16
)

// eachFile runs one on every file, chunks of them on goroutines of their
// own, and returns a reason one gave (the first in the files' order among
// those checked: once one is found, the chunks not begun are skipped), or
// "" and one of the places any said fresh.
func eachFile(files []File, one func(File) (why, fresh string)) (string, string) {
	chunks := (len(files) + checkChunk - 1) / checkChunk
	whys, freshes := make([]string, chunks), make([]string, chunks)
	inChunks(len(files), func(c, lo, hi int) bool {
		for _, f := range files[lo:hi] {
			why, fresh := one(f)
			if why != "" {
				whys[c] = why
				return true
			}
			freshes[c] = cmp.Or(freshes[c], fresh)
		}
		return false
	})
	if why := cmp.Or(whys...); why != "" {
		return why, ""
	}
	return "", cmp.Or(freshes...)
}

// inChunks runs chunk on the c-th range [lo, hi) of checkChunk of n items,
// every range once, on at most checkWorkers goroutines, the caller's
// among them; once a chunk returns true, the ranges not begun are
// skipped.
func inChunks(n int, chunk func(c, lo, hi int) (stop bool)) {
	chunks := (n + checkChunk - 1) / checkChunk
	var next atomic.Int64
	var stopped atomic.Bool
	run := func() {
		for c := int(next.Add(1)) - 1; c < chunks && !stopped.Load(); c = int(next.Add(1)) - 1 {
			if chunk(c, c*checkChunk, min((c+1)*checkChunk, n)) {
				stopped.Store(true)
			}
		}
	}
	var wg sync.WaitGroup
	for range min(checkWorkers, 2*runtime.GOMAXPROCS(0), chunks) - 1 {
		wg.Go(run)
	}
	run()
	wg.Wait()
}

func (fc *fileChecker) checkOne(f File) string {
	switch f.Kind {
	case FileDay:
		// The day as the compiler in a worker writes it: in the zone the C
		// library reads from the server's environment, which the workers
		// inherit. Go's time.Local is not always that zone (TZ=UTC-14 is
		// UTC to Go, UTC+14 to glibc), and the client's zone may be
		// neither.
		day, err := deps.Day(fc.now())
		if err != nil {
			return "the server's day for __DATE__ is not known: " + err.Error()
		}
		if day != f.Path {
			return fmt.Sprintf("the day is %s, the key's %s", day, f.Path)
		}
		return ""
	case FileAbsent:
		if _, err := os.Stat(f.Path); !errors.Is(err, fs.ErrNotExist) {
			return f.Path + " exists now, or cannot be checked"
		}
		fc.noteDir(nearestDir(f.Path))
		return ""
	}
	d, err := fc.digest(f.Path)
	if err != nil {
		return err.Error()
	}
	if d != f.Digest {
		return f.Path + " changed"
	}
	return ""
}

// digest returns the SHA-256 of the file at path, from memory when its
// stat identity is the one hashed and it had settled then.
func (fc *fileChecker) digest(path string) ([32]byte, error) {
	seen := fc.now()
	fi, err := os.Stat(path)
	if err != nil {
		return [32]byte{}, fmt.Errorf("compileserver: %w", err)
	}
	st := statOf(fi)
	fc.mu.Lock()
	old, ok := fc.known[path]
	fc.mu.Unlock()
	if ok && old.settled && old.sameFile(st) {
		return old.digest, nil
	}
	hashed := fc.now()
	f, err := os.Open(path)
	if err != nil {
		return [32]byte{}, fmt.Errorf("compileserver: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [32]byte{}, fmt.Errorf("compileserver: %w", err)
	}
	copy(st.digest[:], h.Sum(nil))
	latest := max(st.mtime, st.ctime)
	st.settled = hashed.UnixNano()-latest > int64(settle)
	st.seen = seen
	if ok && old.sameFile(st) {
		st.seen = old.seen
	}
	fc.mu.Lock()
	fc.known[path] = st
	fc.mu.Unlock()
	return st.digest, nil
}

func (a fileState) sameFile(b fileState) bool {
	return a.size == b.size && a.mtime == b.mtime && a.ctime == b.ctime && a.ino == b.ino && a.dev == b.dev
}

func statOf(fi fs.FileInfo) fileState {
	st := fileState{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ctime = s.Ctim.Nano()
		st.ino, st.dev = s.Ino, uint64(s.Dev)
	}
	return st
}

// checkSince checks files as check does, for a compile that began at
// start, before the client knew its key (Request.FilesLater): that compile
// read the files as they were then, which the digests alone cannot tell.
// It returns why a file differs from the key (stale), or, in fresh, a
// file or directory that may have been another at start (for the log).
// A file is trusted only if this checker saw it, by the same stat
// identity (device, inode, size, times), before
// start (in the checks of earlier requests), and its change time (which
// no one can set back) is at least settle older than start: a file
// replaced (a new inode: a renamed tree, a switched link) or written in
// place since is fresh. A place that must be absent is trusted by the same
// rule applied to the nearest directory above it that exists, whose times
// change when an entry is made or removed there.
func (fc *fileChecker) checkSince(files []File, start time.Time) (why, fresh string) {
	return eachFile(files, func(f File) (string, string) {
		if why := fc.checkOne(f); why != "" {
			return why, ""
		}
		switch f.Kind {
		case FileDay:
			if day, err := deps.Day(start); err != nil || day != f.Path {
				return "", "the day"
			}
		case FileAbsent:
			if dir := nearestDir(f.Path); !fc.stableSince(dirKey(dir), dir, start) {
				return "", dir
			}
		default:
			if !fc.stableSince(f.Path, f.Path, start) {
				return "", f.Path
			}
		}
		return "", ""
	})
}

// stableSince reports whether path is what this checker saw, under key,
// before start, and unchanged since settle before start.
func (fc *fileChecker) stableSince(key, path string, start time.Time) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st := statOf(fi)
	fc.mu.Lock()
	old, ok := fc.known[key]
	fc.mu.Unlock()
	return ok && old.sameFile(st) && old.seen.Before(start) &&
		max(st.mtime, st.ctime) < start.Add(-fc.settle).UnixNano()
}

// noteDir records the identity of a directory, for stableSince.
func (fc *fileChecker) noteDir(dir string) {
	seen := fc.now()
	fi, err := os.Stat(dir)
	if err != nil {
		return
	}
	st := statOf(fi)
	st.seen = seen
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if old, ok := fc.known[dirKey(dir)]; ok && old.sameFile(st) {
		return
	}
	fc.known[dirKey(dir)] = st
}

// dirKey is a directory's key in fileChecker.known, apart from files'.
func dirKey(dir string) string { return "dir:" + dir }

// nearestDir is the nearest directory above path that exists.
func nearestDir(path string) string {
	dir := filepath.Dir(path)
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

// watch notes the stat identity of each file of files, and of the nearest
// existing directory above each place that must stay absent, and returns
// a function that says why one is not the same now, or "". A compile run
// between the two read what the checks before and after it saw: those
// compare digests, which a header edited and then restored while the
// compiler ran keeps (a copy that keeps its times, a stash and its pop),
// while the image, and the precompiled headers the compile made or
// trusted by modification time, hold the edit. The change time, which no
// one can set back, tells.
func (fc *fileChecker) watch(files []File) func() string {
	before := fc.identities(files)
	return func() string {
		now := fc.identities(files)
		for i, st := range now {
			if st.path != before[i].path || st.err || before[i].err || !st.sameFile(before[i].fileState) {
				return files[i].Path + " changed while the compiler ran"
			}
		}
		return ""
	}
}

// identity is what watch compares of one file: the stat identity of the
// path it looked at (the file, or the directory above an absent place).
type identity struct {
	fileState
	path string
	err  bool
}

// identities stats what watch watches of each file, in chunks on
// goroutines of their own as eachFile does.
func (fc *fileChecker) identities(files []File) []identity {
	out := make([]identity, len(files))
	inChunks(len(files), func(_, lo, hi int) bool {
		for i := lo; i < hi; i++ {
			out[i] = identityOf(files[i])
		}
		return false
	})
	return out
}

// identityOf stats what watch compares of f: the file, or the nearest
// directory above an absent place; nothing of a day.
func identityOf(f File) identity {
	path := f.Path
	switch f.Kind {
	case FileDay:
		return identity{}
	case FileAbsent:
		path = nearestDir(f.Path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return identity{path: path, err: true}
	}
	return identity{fileState: statOf(fi), path: path}
}
