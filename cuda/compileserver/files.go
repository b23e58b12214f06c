package compileserver

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
}

// fileState is a file's identity when its content was hashed.
type fileState struct {
	size, mtime, ctime int64
	ino, dev           uint64
	digest             [32]byte
	settled            bool // changed longer than settle before it was hashed
}

func newFileChecker() fileChecker {
	return fileChecker{known: map[string]fileState{}, now: time.Now}
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
