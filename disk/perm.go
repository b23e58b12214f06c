package disk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// modes are the permissions of what a store creates. A private cache is
// its user's alone; a shared one (Options.Shared) is its group's too, as
// ccache's umask setting makes it: a team, or a container image warmed by
// one user and run by another of the same group, shares one cache.
type modes struct {
	dir, file fs.FileMode
}

var (
	privateModes = modes{dir: 0o700, file: 0o600}
	// sharedModes set the set-group-ID bit on directories, so that what
	// any member creates below belongs to the cache's group.
	sharedModes = modes{dir: 0o770 | fs.ModeSetgid, file: 0o660}
)

func modesFor(shared bool) modes {
	if shared {
		return sharedModes
	}
	return privateModes
}

func (m modes) shared() bool { return m.file&0o070 != 0 }

// fix gives f the store's file mode where the process's umask, or
// os.CreateTemp's fixed 0600, narrowed it. A file another member of the
// group created keeps its mode: only its owner may change it.
func (m modes) fix(f *os.File) error {
	if !m.shared() {
		return nil
	}
	if err := f.Chmod(m.file); err != nil && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return nil
}

// openFile opens path, one of the store's own files (a lock, a journal,
// the size file, trim.txt), with flags, creating it with the store's file
// mode. It never blocks: a journal opened for appending where someone
// planted a FIFO would otherwise wait for a reader for ever (readFlags).
// It never follows a symbolic link: through one planted at trim.txt or a
// journal, a write would truncate or append to a file outside the cache,
// and through a dangling one at a lock, create one. A link found where a
// file is to be created is removed, the store's file made in its place.
func (m modes) openFile(path string, flags int) (*os.File, error) {
	flags |= syscall.O_NONBLOCK | syscall.O_NOFOLLOW
	f, err := os.OpenFile(path, flags, m.file)
	if errors.Is(err, syscall.ELOOP) && flags&os.O_CREATE != 0 && os.Remove(path) == nil {
		f, err = os.OpenFile(path, flags, m.file)
	}
	if err != nil {
		return nil, err
	}
	if err := m.fix(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// mkdirAll creates path and any missing parent with the store's directory
// mode, past the umask.
func (m modes) mkdirAll(path string) error {
	if !m.shared() {
		return os.MkdirAll(path, m.dir.Perm())
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil
	}
	if parent := filepath.Dir(path); parent != path {
		if err := m.mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(path, m.dir.Perm()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return os.Chmod(path, m.dir)
}
