package compileserver

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
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
}

func newFileChecker() fileChecker {
	return fileChecker{known: map[string]fileState{}, now: time.Now, settle: settle}
}

// check returns why a file differs from what the request asserts, or "".
func (fc *fileChecker) check(files []File) string {
	for _, f := range files {
		if why := fc.checkOne(f); why != "" {
			return why
		}
	}
	return ""
}

func (fc *fileChecker) checkOne(f File) string {
	switch f.Kind {
	case FileDay:
		if day := fc.now().Format("Jan _2 2006"); day != f.Path {
			return fmt.Sprintf("the day is %s, the key's %s", day, f.Path)
		}
		return ""
	case FileAbsent:
		if _, err := os.Stat(f.Path); !errors.Is(err, fs.ErrNotExist) {
			return f.Path + " exists now, or cannot be checked"
		}
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
// It returns why a file differs from the key (stale), or fresh when one
// may have changed after start: its change time (which no one can set
// back) is not at least settle older than start (a margin for the coarse
// clocks that stamp it), or, for a place that must be absent, the change
// time of the nearest directory above it that exists (an entry made and
// removed changes it). With neither, every file held its key's content
// throughout the compile.
func (fc *fileChecker) checkSince(files []File, start time.Time) (why string, fresh bool) {
	before := start.Add(-fc.settle).UnixNano()
	for _, f := range files {
		if why := fc.checkOne(f); why != "" {
			return why, false
		}
		switch f.Kind {
		case FileDay:
			fresh = fresh || start.Format("Jan _2 2006") != f.Path
		case FileAbsent:
			fresh = fresh || changedSince(nearestDir(f.Path), before)
		default:
			fresh = fresh || changedSince(f.Path, before)
		}
	}
	return "", fresh
}

// changedSince reports whether path changed at or after the time t (Unix
// nanoseconds), or cannot be told.
func changedSince(path string, t int64) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return true
	}
	st := statOf(fi)
	return max(st.mtime, st.ctime) >= t
}

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
