package keyparts

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Driver is what the OpenCL drivers loaded in a process are made of.
type Driver struct {
	// ICD are the libraries the ICD loader's vendor files name, as mapped
	// into the process, in map order.
	ICD Files
	// Files are every file of the drivers: the ICD libraries, the
	// libraries they need (their DT_NEEDED closure, as mapped), the
	// plugins in their own directories (PoCL's lib/pocl/*.so, which it
	// opens itself), and their data files (PoCL's share/pocl: headers
	// and kernel library bitcode; clang's resource headers).
	Files Files
}

// Library returns the ICD libraries as one Library: paths joined by ':',
// sizes summed, times XORed.
func (d Driver) Library() Library {
	var out Library
	for _, f := range d.ICD {
		if out.Path != "" {
			out.Path += ":"
		}
		out.Path += f.Path
		out.Size += f.Size
		out.MTime ^= f.MTime
	}
	return out
}

// OpenCLDriver returns the files of the OpenCL drivers this process has
// loaded, found by matching the libraries the ICD loader's vendor files
// name against the process's memory map. It is computed once a driver is
// found (a call before the driver is loaded finds none, and is not
// remembered); the zero Driver where none is. Where PrefetchOpenCLDriver
// ran, its answer is taken if what it was computed from (the vendor
// files' names, the library search path, the memory map) is still what
// this call reads; otherwise it is computed again.
func OpenCLDriver() Driver {
	loadedDriver.mu.Lock()
	defer loadedDriver.mu.Unlock()
	if len(loadedDriver.d.ICD) > 0 {
		return loadedDriver.d
	}
	p := loadedDriver.prefetch
	loadedDriver.prefetch = nil
	in, ok := p.reuse()
	if ok {
		loadedDriver.d = p.d
		return p.d
	}
	loadedDriver.d = searchOpenCLDriver(in)
	return loadedDriver.d
}

// PrefetchOpenCLDriver starts finding the drivers' files in the background,
// for a later OpenCLDriver: a caller that knows the drivers are loaded (a
// device was listed, a context made) but will not need their files for a
// while. It also finds the compiler's built-in headers that OpenCLScan
// names. Each call after the first searches again only if what the
// process tells the search changed since the previous prefetch (a driver
// that loads its plugins late): by the dynamic loader's counts where
// SetLoaderCounter gave them, else by the memory map. It does nothing once
// the drivers' files are found, nor after maxPrefetches calls (an
// application that lists its devices in a loop).
func PrefetchOpenCLDriver() {
	loadedDriver.mu.Lock()
	defer loadedDriver.mu.Unlock()
	if len(loadedDriver.d.ICD) > 0 || loadedDriver.prefetches >= maxPrefetches {
		return
	}
	loadedDriver.prefetches++
	if loadedDriver.prefetches == 1 {
		// The compiler's own headers, which the first scan asks for, are
		// found beside the driver's files, off the application's thread.
		PrefetchBuiltinHeaders()
	}
	prev := loadedDriver.prefetch
	p := &driverPrefetch{done: make(chan struct{})}
	loadedDriver.prefetch = p
	go func() {
		defer close(p.done)
		in, ok := prev.reuse()
		if p.in = in; ok {
			p.d = prev.d
			return
		}
		p.d = searchOpenCLDriver(p.in)
	}()
}

// maxPrefetches bounds PrefetchOpenCLDriver's searches in a process.
const maxPrefetches = 4

var loadedDriver struct {
	mu         sync.Mutex
	d          Driver
	prefetch   *driverPrefetch // the latest, under way or done, not yet taken
	prefetches int             // started so far
}

// reuse waits for p (nil: none) and reports whether its driver still
// holds: the process tells the search what it told p. Where p has the
// dynamic loader's counts, they decide with the vendor names and search
// path, and the memory map is not read; elsewhere the memory map is
// compared too. in is what the process tells the search now: p's own
// inputs where they hold, else read afresh, for a new search.
func (p *driverPrefetch) reuse() (in driverInputs, ok bool) {
	if p == nil {
		return readDriverInputs(), false
	}
	<-p.done
	switch {
	case len(p.d.ICD) == 0:
		return readDriverInputs(), false
	case p.in.loads.ok:
		// The memory map, thousands of lines in a large application,
		// is read only for the new search.
		if currentLoaderCount() == p.in.loads && p.in.sameSearch(readDriverSearch()) {
			return p.in, true
		}
		return readDriverInputs(), false
	}
	in = readDriverInputs()
	return in, p.in.equal(in)
}

// driverPrefetch is a driver found in the background, and what from.
type driverPrefetch struct {
	done chan struct{} // closed when in and d are set
	in   driverInputs
	d    Driver
}

// driverInputs are what the process tells openCLDriver: which libraries
// the ICD loader may load, where bare names are looked for, and what is
// mapped; and, where known, the dynamic loader's count of what it loaded.
type driverInputs struct {
	names, search []string
	mapped        []Mapping
	loads         loaderCount
}

// loaderCount is how many objects the dynamic loader had loaded (adds) and
// unloaded (subs) in this process at a moment; ok false where unknown.
type loaderCount struct {
	adds, subs uint64
	ok         bool
}

// loaderCounter, where set (SetLoaderCounter), returns the dynamic loader's
// counts now.
var loaderCounter func() (adds, subs uint64, ok bool)

// SetLoaderCounter gives the package the dynamic loader's counts of the
// objects it loaded and unloaded (glibc's dl_iterate_phdr dlpi_adds and
// dlpi_subs, which a pure Go package cannot ask for): with them, a
// prefetched driver is checked without reading the process's memory map,
// thousands of lines in a large application. The libraries a driver's
// files are found from (the ICD libraries, their plugins, what they
// need) are all loaded by the dynamic loader, so counts that did not move
// mean none of them changed. Set it before the first prefetch.
func SetLoaderCounter(f func() (adds, subs uint64, ok bool)) { loaderCounter = f }

func currentLoaderCount() loaderCount {
	if loaderCounter == nil {
		return loaderCount{}
	}
	adds, subs, ok := loaderCounter()
	return loaderCount{adds: adds, subs: subs, ok: ok}
}

// readDriverInputs reads the inputs, the loader's count first: a library
// loaded between the two reads then shows as a changed count.
func readDriverInputs() driverInputs {
	in := driverInputs{loads: currentLoaderCount()}
	in.names, in.search = readDriverSearch()
	in.mapped = ReadMaps()
	return in
}

// readDriverSearch reads which libraries the ICD loader may load and where
// bare names are looked for.
func readDriverSearch() (names, search []string) {
	return icdNames(os.Getenv), librarySearchPath(os.Getenv("LD_LIBRARY_PATH"))
}

func (a driverInputs) equal(b driverInputs) bool {
	return a.sameSearch(b.names, b.search) && slices.Equal(a.mapped, b.mapped)
}

func (a driverInputs) sameSearch(names, search []string) bool {
	return slices.Equal(a.names, names) && slices.Equal(a.search, search)
}

// searchOpenCLDriver is openCLDriver for a guest in an application's
// process: a panic of the search (a reader's bug on a file it did not
// expect) gives a driver made of a mark no other search makes, instead
// of ending the application. What is built under it is then never found
// by another process, nor by a later one.
func searchOpenCLDriver(in driverInputs) (d Driver) {
	defer func() {
		if r := recover(); r != nil {
			f := failedSearch(r)
			d = Driver{ICD: f, Files: f}
		}
	}()
	return openCLDriver(in.names, in.mapped, in.search)
}

// failedSearch is the mark of a search that panicked: unique to this
// process and moment.
func failedSearch(r any) Files {
	return Files{{Path: fmt.Sprintf("(driver search failed in process %d: %v)", os.Getpid(), r), MTime: time.Now().UnixNano()}}
}

// searchFaults, where a test sets it (a func(step string)), is called at
// steps of the search, to make them fail.
var searchFaults atomic.Value

func searchFault(step string) {
	if f, _ := searchFaults.Load().(func(string)); f != nil {
		f(step)
	}
}

// openCLDriver finds the drivers that names (vendor files' library names)
// resolve to among mapped, searching bare names in search.
func openCLDriver(names []string, mapped []Mapping, search []string) Driver {
	searchFault("start")
	icd := icdMappings(names, mapped, search)
	if len(icd) == 0 {
		return Driver{}
	}
	var d Driver
	roots := slices.Clone(icd)
	var disk [][]string
	for _, m := range icd {
		d.ICD = append(d.ICD, mappedID(m))
		plugins, unmapped := pluginFiles(m.Path, mapped)
		roots = append(roots, plugins...)
		disk = append(disk, unmapped)
	}
	// The data directories' walk and stats (PoCL's headers and kernel
	// library) run beside the closure's reads: a new process's first
	// build waits for both.
	dataIDs := make(chan Files, 1)
	go func() {
		var ids Files
		defer func() {
			if r := recover(); r != nil {
				ids = failedSearch(r)
			}
			dataIDs <- ids
		}()
		searchFault("data")
		var data []string
		for i, m := range icd {
			data = append(data, disk[i]...)
			data = append(data, dataFiles(m.Path)...)
		}
		ids = statFiles(data)
	}()
	libs, ids, widened := closureOrMapped(roots, mapped)
	if widened {
		d.Files = append(d.Files, widenedFiles)
	}
	var headers []string
	for _, m := range libs {
		d.Files = append(d.Files, mappedIDFrom(m, ids))
		headers = append(headers, resourceHeaders(m.Path)...)
	}
	d.Files = append(d.Files, <-dataIDs...)
	d.Files = append(d.Files, statFiles(headers)...)
	return d
}

// unfoundDriverFiles is what a key holds of a driver that OpenCLDriver
// does not find among mapped: every mapped file, marked. A key that held
// only the driver's version strings would stay the same across a
// rebuilt driver or compiler library of the same version.
func unfoundDriverFiles(mapped []Mapping) Files {
	out := Files{unfoundDriver}
	for _, m := range mapped {
		out = append(out, mappedID(m))
	}
	return out
}

// unfoundDriver marks the files of unfoundDriverFiles.
var unfoundDriver = FileID{Path: "(no driver library found: every mapped file)"}

// statFiles returns the identities of the files at paths, in order; one
// that cannot be read is keyed by its path, marked.
func statFiles(paths []string) Files {
	out := make(Files, 0, len(paths))
	for _, p := range paths {
		id, err := statReal(p)
		if err != nil {
			id.Path += " (unreadable)"
		}
		out = append(out, id)
	}
	return out
}

// mappedID returns the identity of a mapped file: the file on disk, or,
// where it was deleted or replaced since it was mapped (the kernel then
// marks its path), the marked path and the inode that was mapped.
//
// A file replaced between the read of the map and this stat still shows
// its old path in the map, but the stat finds another inode: the
// identity is then the new file's, under a marked path, so that the key
// of code still running from the old file is never the key of the new
// one. (A file system whose stat and map never agree on inodes marks
// every file the same way each time, which costs nothing but the mark.)
func mappedID(m Mapping) FileID {
	if strings.HasSuffix(m.Path, " (deleted)") {
		return FileID{Path: m.Path, Inode: m.Inode}
	}
	id, err := statReal(m.Path)
	if err != nil {
		return FileID{Path: m.Path + " (unreadable)", Inode: m.Inode}
	}
	return markReplaced(id, m)
}

// markReplaced marks id, a stat of m's path, where it found another
// inode than the one mapped (see mappedID).
func markReplaced(id FileID, m Mapping) FileID {
	if id.Inode != 0 && m.Inode != 0 && id.Inode != m.Inode {
		id.Path += " (not the mapped file)"
	}
	return id
}

// mappedIDFrom is mappedID, taking the stat a closure's read of the
// library made (ids, by path) where it has one.
func mappedIDFrom(m Mapping, ids map[string]fileIdentity) FileID {
	st, ok := ids[m.Path]
	if !ok || strings.HasSuffix(m.Path, " (deleted)") {
		return mappedID(m)
	}
	id := FileID{Path: m.Path, Size: st.size, MTime: st.mtime.Nano(), CTime: st.ctime.Nano(), Inode: st.ino}
	return markReplaced(id, m)
}

// icdMappings returns the mapped files that names resolve to, as the
// dynamic loader resolves a library name: a name with a slash is a path,
// a bare name is looked for in each directory of search. A candidate
// matches the mapped file with its device and inode numbers (which
// /proc/self/maps gives for the file actually loaded) or its real path:
// NVIDIA's vendor file names libnvidia-opencl.so.1, a link to the file
// that is mapped.
func icdMappings(names []string, mapped []Mapping, search []string) []Mapping {
	type key struct{ dev, ino uint64 }
	ids, reals := map[key]bool{}, map[string]bool{}
	for _, name := range names {
		for _, cand := range libraryCandidates(name, search) {
			dev, ino, err := devIno(cand)
			if err != nil {
				continue // nothing there: no link leads anywhere either
			}
			ids[key{dev, ino}] = true
			if real, err := filepath.EvalSymlinks(cand); err == nil {
				reals[real] = true
			}
		}
	}
	var out []Mapping
	for _, m := range mapped {
		if ids[key{m.Dev, m.Inode}] || reals[m.Path] {
			out = append(out, m)
		}
	}
	return out
}

// libraryCandidates returns the paths the library name may be loaded
// from: name itself where it holds a slash, else name in each directory.
func libraryCandidates(name string, search []string) []string {
	if strings.Contains(name, "/") {
		return []string{name}
	}
	out := make([]string, 0, len(search))
	for _, dir := range search {
		out = append(out, filepath.Join(dir, name))
	}
	return out
}

// pluginFiles returns the plugins of the driver library at lib: the
// files in its own directory, named after it (lib/pocl for
// lib/libpocl.so.2), as mapped (roots of the closure) and the rest found
// on disk there, which the driver may open later.
func pluginFiles(lib string, mapped []Mapping) (loaded []Mapping, disk []string) {
	dir := filepath.Join(filepath.Dir(lib), driverStem(lib))
	inDir := map[string]bool{}
	for _, m := range mapped {
		if strings.HasPrefix(m.Path, dir+"/") {
			loaded = append(loaded, m)
			inDir[m.Path] = true
		}
	}
	names, _ := dirNames(dir)
	slices.Sort(names) // as os.ReadDir gives them
	for _, name := range names {
		p := filepath.Join(dir, name)
		if !inDir[p] && strings.Contains(name, ".so") {
			disk = append(disk, p)
		}
	}
	return loaded, disk
}

// driverStem returns the name a driver's own directories carry: the
// library's file name less "lib" and its ".so" suffix ("pocl").
func driverStem(lib string) string {
	stem, _, _ := strings.Cut(filepath.Base(lib), ".so")
	return strings.TrimPrefix(stem, "lib")
}

// maxDataFiles bounds the walk of a data directory.
const maxDataFiles = 4096

// dataFiles returns the files of the driver library at lib's data
// directory: share/STEM under the nearest ancestor of the library's
// directory that has one (/usr/share/pocl for
// /usr/lib/x86_64-linux-gnu/libpocl.so.2, /usr/local/share/pocl for a
// PoCL installed under /usr/local), where PoCL finds its headers and
// kernel library relative to itself.
func dataFiles(lib string) []string {
	stem := driverStem(lib)
	for d := filepath.Dir(lib); ; d = filepath.Dir(d) {
		if dir := filepath.Join(d, "share", stem); isDir(dir) {
			return walkFiles(dir)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// resourceHeaders returns the OpenCL headers of clang's resource
// directory where lib is a clang library (LIBDIR/libclang-cpp.so.15 has
// LIBDIR/clang/VERSION/include): PoCL force-includes opencl-c.h and
// opencl-c-base.h from there (or from its own data directory, where it
// was built relocatable). The directory's other headers are not searched:
// PoCL gives clang no resource directory to search.
func resourceHeaders(lib string) []string {
	if !strings.HasPrefix(filepath.Base(lib), "libclang") {
		return nil
	}
	clang := filepath.Join(filepath.Dir(lib), "clang")
	versions, _ := dirNames(clang)
	slices.Sort(versions)
	var matches []string // as filepath.Glob(clang/*/include/opencl-c*.h)
	for _, v := range versions {
		matches = append(matches, globFiles(filepath.Join(clang, v, "include"), "opencl-c*.h")...)
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range matches {
		real, err := filepath.EvalSymlinks(m)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		out = append(out, real)
	}
	return out
}

// walkFiles returns the regular files under dir, at most maxDataFiles and
// then dir itself with a marker, so a directory too large to key is never
// keyed as if it were smaller.
func walkFiles(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil
		}
		if len(out) == maxDataFiles {
			out = append(out, dir+" (too many files)")
			return filepath.SkipAll
		}
		out = append(out, p)
		return nil
	})
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// LibraryFiles returns the files a library loaded in this process is made
// of: the file at path as mapped (or as found on disk where it is not
// mapped), the libraries it needs (its DT_NEEDED closure, as mapped), and
// the files of its directory that match the companions patterns
// (filepath.Match): libraries it opens only when first used, such as
// NVRTC's libnvrtc-builtins.so.*, which the map cannot show yet.
func LibraryFiles(path string, companions ...string) Files {
	return libraryFiles(path, ReadMaps(), companions)
}

func libraryFiles(path string, mapped []Mapping, companions []string) Files {
	root := icdMappings([]string{path}, mapped, nil)
	var out Files
	if len(root) == 0 {
		id, err := StatFile(path)
		if err != nil {
			id.Path += " (unreadable)"
		}
		out = append(out, id)
	}
	libs, ids, widened := closureOrMapped(root, mapped)
	if widened {
		out = append(out, widenedFiles)
	}
	for _, m := range libs {
		out = append(out, mappedIDFrom(m, ids))
	}
	dir := filepath.Dir(path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		dir = filepath.Dir(real)
	}
	return append(out, companionFiles(dir, companions)...)
}

// companionFiles returns the identities of the files under dir that
// match patterns (filepath.Match; a pattern may name a subdirectory).
// Each directory is listed once for all its patterns, and its names are
// not sorted, where filepath.Glob lists and sorts it once per pattern:
// the driver's directory (/usr/lib/x86_64-linux-gnu) holds thousands
// of files, and a new process's first key waits for this search.
func companionFiles(dir string, patterns []string) Files {
	byDir := map[string][]string{}
	var dirs []string
	var out Files
	add := func(path string) {
		if id, err := StatFile(path); err == nil {
			out = append(out, id)
		}
	}
	for _, p := range patterns {
		full := filepath.Join(dir, p)
		d, base := filepath.Dir(full), filepath.Base(full)
		if strings.ContainsAny(d, `*?[\`) {
			matches, _ := filepath.Glob(full) // a pattern over directories: rare
			for _, m := range matches {
				add(m)
			}
			continue
		}
		if _, ok := byDir[d]; !ok {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], base)
	}
	for _, d := range dirs {
		var matched []string
		for _, name := range listNames(d) {
			for _, pattern := range byDir[d] {
				if ok, _ := filepath.Match(pattern, name); ok {
					matched = append(matched, name)
					break
				}
			}
		}
		slices.Sort(matched)
		for _, name := range matched {
			add(filepath.Join(d, name))
		}
	}
	return out
}

// listNames returns the names in dir, unsorted; none where it cannot be
// read.
func listNames(dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	return names
}
