package disk

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// trashPrefix names a version directory that Clear has taken out of use
// and is removing.
const trashPrefix = ".trash-"

// Clear removes every entry, of every format version. It first renames each
// version directory aside, which other processes see at once as an empty
// cache, then removes it; a Clear interrupted midway leaves a .trash-*
// directory that the next Clear removes. It also removes the spool files
// that imports of earlier versions, killed, left in the root.
func (s *Store) Clear(ctx context.Context) error {
	// This process's background work would otherwise go on writing totals
	// of the entries being removed into the new, empty cache.
	if err := s.wait(ctx); err != nil {
		return fmt.Errorf("disk: clear: %w", err)
	}
	names, err := readRootNames(s.root)
	if err != nil {
		return fmt.Errorf("disk: clear: %w", err)
	}
	var errs []error
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := filepath.Join(s.root, name)
		if isVersionName(name) {
			trash := filepath.Join(s.root, trashPrefix+rand.Text())
			if err := os.Rename(p, trash); err != nil {
				errs = append(errs, err)
				continue
			}
			s.at("clear:renamed")
			p = trash
		} else if !strings.HasPrefix(name, trashPrefix) && !strings.HasPrefix(name, importPrefix) {
			continue
		}
		errs = append(errs, os.RemoveAll(p))
	}
	s.nextTrim.Store(0)
	s.lastTotal.Store(0)
	errs = append(errs, s.modes.mkdirAll(s.dir))
	s.vdir.Store(openDirHandle(s.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("disk: clear: %w", err)
	}
	return nil
}

// removeLeftovers removes what a Clear or an import killed midway left in
// the cache's root: a version directory renamed aside (.trash-*), which
// may hold all the cache was, and the spool of an earlier version's
// import; and the temporary file of a write of the counters or the limit
// killed before its rename, once older than deadTempAge (a live one is
// renamed within microseconds). The daily maintenance pass calls it, so
// that they do not stay outside every limit until someone clears the
// cache. A live Clear removing the same directory meanwhile is no matter:
// each removes what the other has not. Best effort.
func (s *Store) removeLeftovers() {
	names, err := readRootNames(s.root)
	if err != nil {
		return
	}
	for _, name := range names {
		p := filepath.Join(s.root, name)
		switch {
		case strings.HasPrefix(name, trashPrefix), strings.HasPrefix(name, importPrefix):
			_ = os.RemoveAll(p)
		case strings.HasPrefix(name, tempPrefix):
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > deadTempAge {
				_ = os.Remove(p)
			}
		}
	}
}

// isVersionName reports whether name is a version directory's: "v" and
// digits.
func isVersionName(name string) bool {
	if len(name) < 2 || name[0] != 'v' {
		return false
	}
	for _, c := range name[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
