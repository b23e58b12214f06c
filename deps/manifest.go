package deps

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"syscall"
)

// Bounds of the conservative key. A search directory is walked whole,
// subdirectories included (an include may name "sub/x.h"); past these
// bounds (a search directory that is $HOME or /) no key can hold every
// file the compiler could read, and the source is not cached at all
// (ErrUncacheable) rather than keyed by a narrower set. Ten thousand files
// is a large kernel tree (hashcat's OpenCL directory holds about 600) and
// costs some milliseconds of stats per warm lookup.
//
// Files are counted and sized before any is read, so a search directory
// that is / stops at the count, not after reading gigabytes.
const (
	maxManifestFiles = 10_000
	maxManifestDepth = 32
	maxManifestBytes = 256 << 20
)

// manifest adds every file under the declared directories to the key, or fails
// with ErrUncacheable. A warm manifest stats each directory and file and
// reads a directory only when its mtime changed, a file only when its
// identity did.
func (sc *scan) manifest() error {
	if len(sc.roots) == 0 {
		return nil
	}
	w := &walk{sc: sc, visited: map[[2]uint64]bool{}}
	for _, root := range sc.roots {
		if err := w.root(root); err != nil {
			return err
		}
	}
	if w.bytes > maxManifestBytes {
		return fmt.Errorf("%w: more than %d bytes in the search directories", ErrUncacheable, maxManifestBytes)
	}
	for _, it := range w.items {
		if it.fi != nil {
			e, err := sc.s.files.get(sc.s.fs, it.dep.Path, it.fi, dataMode)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrUncacheable, it.dep.Path, err)
			}
			it.dep.Digest = e.digest
		}
		sc.add(it.dep)
	}
	return nil
}

// walk is one manifest's traversal state.
type walk struct {
	sc      *scan
	items   []walkItem // in order; files are read once the walk is done
	files   int
	bytes   int64
	visited map[[2]uint64]bool // directories by device and inode: symbolic links may loop
}

// walkItem is a dependency the walk found: a file to digest (fi set) or an
// absent place.
type walkItem struct {
	dep Dependency
	fi  fs.FileInfo
}

func (w *walk) root(dir string) error {
	fi, err := w.sc.stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		// Nothing to search yet; creating the directory changes the key.
		w.items = append(w.items, walkItem{dep: Dependency{Path: dir, Name: w.sc.location(dir), Rule: RuleAbsent}})
		return nil
	case err != nil:
		return fmt.Errorf("%w: search directory %s: %w", ErrUncacheable, dir, err)
	case !fi.IsDir():
		return nil // the compiler searches directories only
	}
	return w.dir(dir, fi, 0)
}

func (w *walk) dir(dir string, fi fs.FileInfo, depth int) error {
	if depth > maxManifestDepth {
		return fmt.Errorf("%w: %s is nested deeper than %d directories", ErrUncacheable, dir, maxManifestDepth)
	}
	id := identityOf(fi)
	if w.visited[[2]uint64{id.dev, id.inode}] {
		return nil
	}
	w.visited[[2]uint64{id.dev, id.inode}] = true
	names, err := w.sc.s.dirs.list(w.sc.s.fs, dir, fi)
	if err != nil {
		return fmt.Errorf("%w: search directory %s: %w", ErrUncacheable, dir, err)
	}
	for _, name := range names {
		if err := w.entry(dir+"/"+name, depth); err != nil {
			return err
		}
	}
	return nil
}

func (w *walk) entry(path string, depth int) error {
	label := w.sc.location(path)
	fi, err := w.sc.stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A dangling link: making its target exist changes the key.
		w.items = append(w.items, walkItem{dep: Dependency{Path: path, Name: label, Rule: RuleAbsent}})
		return nil
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrUncacheable, path, err)
	case fi.IsDir():
		return w.dir(path, fi, depth+1)
	case !fi.Mode().IsRegular():
		// A pipe or a device the compiler may be told to include: what it
		// would read is not there to key.
		return fmt.Errorf("%w: %s is not a regular file (%v)", ErrUncacheable, path, fi.Mode().Type())
	}
	if w.files++; w.files > maxManifestFiles {
		return fmt.Errorf("%w: more than %d files in the search directories", ErrUncacheable, maxManifestFiles)
	}
	w.bytes += fi.Size()
	w.items = append(w.items, walkItem{dep: Dependency{Path: path, Name: label, Rule: RuleManifest}, fi: fi})
	return nil
}

// dirCache remembers directory listings under the directory's identity:
// creating, removing or renaming an entry changes a directory's mtime.
type dirCache struct {
	mu      sync.Mutex
	entries map[string]dirEntry // guarded by mu
}

type dirEntry struct {
	id      identity
	names   []string
	settled bool // the directory was settled when listed
}

func newDirCache() *dirCache { return &dirCache{entries: map[string]dirEntry{}} }

// list returns the names in dir, whose stat is fi.
func (c *dirCache) list(fsys *fileSystem, dir string, fi fs.FileInfo) ([]string, error) {
	id := identityOf(fi)
	c.mu.Lock()
	e, ok := c.entries[dir]
	c.mu.Unlock()
	if ok && e.settled && e.id == id {
		return e.names, nil
	}
	ents, err := fsys.readDir(dir)
	if err != nil {
		return nil, err
	}
	e = dirEntry{id: id, names: make([]string, len(ents)), settled: id.settled(fsys.now())}
	for i, d := range ents {
		e.names[i] = d.Name()
	}
	c.mu.Lock()
	if len(c.entries) >= maxFileEntries {
		clear(c.entries)
	}
	c.entries[dir] = e
	c.mu.Unlock()
	return e.names, nil
}
