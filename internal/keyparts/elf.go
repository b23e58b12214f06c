package keyparts

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// closureOrMapped returns roots and every mapped library they need
// (closure); where the needs of one of them could not be read, it
// returns every mapped file instead, and widened true. A library whose
// dynamic section is unreadable (deleted or replaced on disk since it
// was mapped, as a package upgrade under a running application leaves
// it; damaged; of a format the readers do not know) may need any of
// them: a key that left them out could stay the same when one changed.
// The wider set rebuilds more often (it changes with the application's
// own libraries), never wrongly.
func closureOrMapped(roots, mapped []Mapping) (libs []Mapping, ids map[string]fileIdentity, widened bool) {
	libs, ids, complete := closure(roots, mapped)
	if complete {
		return libs, ids, false
	}
	seen := map[string]bool{}
	for _, m := range libs {
		seen[m.Path] = true
	}
	for _, m := range mapped {
		if !seen[m.Path] {
			seen[m.Path] = true
			libs = append(libs, m)
		}
	}
	return libs, ids, true
}

// widenedFiles marks, in a set of files, that it holds every mapped file
// because a closure could not be followed (closureOrMapped).
var widenedFiles = FileID{Path: "(a library's needs unread: every mapped file)"}

// closure returns roots and every mapped library they need, directly or
// through each other: each DT_NEEDED name matched against mapped by the
// loaded library's DT_SONAME (or its file name, which is how the dynamic
// loader recognises a library it already loaded). Libraries of the
// process that the roots do not need are left out, so that two
// applications using the same driver get the same closure. complete is
// false where a library of the closure could not be read: what it needs
// is then unknown. ids holds the stat each library's read made, by path:
// the caller keys the libraries by it rather than stat them again.
func closure(roots, mapped []Mapping) (_ []Mapping, ids map[string]fileIdentity, complete bool) {
	complete = true
	out := []Mapping{}
	seen := map[string]bool{}
	libs := newDynCache()
	defer libs.close()
	add := func(m Mapping) {
		if !seen[m.Path] {
			seen[m.Path] = true
			out = append(out, m)
			libs.start(m.Path)
		}
	}
	for _, r := range roots {
		add(r)
	}
	byName := candidatesByName(mapped)
	for i := 0; i < len(out); i++ { // out grows as needed libraries are found
		d, err := libs.read(out[i].Path)
		if err != nil {
			complete = false
			continue
		}
		for _, name := range d.needed {
			for _, m := range byName(name) {
				if filepath.Base(m.Path) != name {
					libs.start(m.Path) // its DT_SONAME decides: read it beside the others
				}
			}
		}
		for _, name := range d.needed {
			for _, m := range byName(name) {
				if providesName(m.Path, name, libs) {
					add(m)
				}
			}
		}
	}
	return out, libs.identities(out), complete
}

// candidatesByName indexes mapped by what mayProvide matches a DT_NEEDED
// name by, and returns the lookup: the mapped files that may provide a
// name, in mapped's order. A large application maps hundreds of files;
// a driver's closure asks for a few hundred names.
func candidatesByName(mapped []Mapping) func(name string) []Mapping {
	byBase := map[string][]Mapping{}
	byStem := map[string][]Mapping{} // "libstdc++" for libstdc++.so.6.0.30
	for _, m := range mapped {
		base := filepath.Base(m.Path)
		byBase[base] = append(byBase[base], m)
		if stem, _, ok := strings.Cut(base, ".so"); ok {
			byStem[stem] = append(byStem[stem], m)
		}
	}
	return func(name string) []Mapping {
		stem, _, ok := strings.Cut(name, ".so")
		if !ok {
			return byBase[name]
		}
		// A name with ".so" in it is matched by its stem (the text before
		// its first ".so"), which every file mayProvide accepts has as its
		// own: the file named name among them.
		return byStem[stem]
	}
}

// mayProvide reports whether the library at path can be the one the
// loader gives for the DT_NEEDED name, by its file name alone: it is
// name, or a version of it whose DT_SONAME then decides.
func mayProvide(path, name string) bool {
	base := filepath.Base(path)
	if base == name {
		return true
	}
	stem, _, ok := strings.Cut(name, ".so")
	return ok && strings.HasPrefix(base, stem+".so")
}

// providesName reports whether the library at path is the one the loader
// gives for the DT_NEEDED name: its file name is name, or it is a version
// of it (libstdc++.so.6.0.30 for libstdc++.so.6) whose DT_SONAME is name.
// A version whose DT_SONAME cannot be read may be it: it is taken, and
// its own read, failing again, leaves the closure incomplete.
func providesName(path, name string, libs *dynCache) bool {
	if filepath.Base(path) == name {
		return true
	}
	if !mayProvide(path, name) {
		return false
	}
	d, err := libs.read(path)
	return err != nil || d.soname == name
}

// dynInfo is what a closure needs of a library's dynamic section.
type dynInfo struct {
	needed []string // DT_NEEDED, in order
	soname string   // DT_SONAME; "" where there is none
}

// dynCache keeps each library's dynamic section by path, for one closure,
// which asks for a library's needs and for its name, each once. A read
// starts as soon as the closure knows it will ask (start), so that the
// reads of a level of the closure (libpocl's LLVM, clang, C++ runtime and
// the rest) run side by side, on dynReaders goroutines: in a new process
// each is a few system calls and the first touch of its pages, and the
// application's thread waits for the whole closure at its first build.
// Only the closure's goroutine uses the map; each read writes its own
// result and closes its done.
type dynCache struct {
	reads map[string]*dynRead
	jobs  chan *dynRead // to the readers, which start with the first read
}

// dynReaders is how many libraries a closure reads at once: enough to
// overlap the system calls of a level, few enough that their stacks, each
// fresh memory in a new process, cost little.
const dynReaders = 3

// dynRead is one library's read, done when done is closed.
type dynRead struct {
	path string
	done chan struct{}
	d    dynInfo
	err  error
	id   fileIdentity // the stat before the read; its path is "" where that failed
}

func newDynCache() *dynCache { return &dynCache{reads: map[string]*dynRead{}} }

// start begins reading the library at path, unless it was begun.
func (c *dynCache) start(path string) *dynRead {
	r, ok := c.reads[path]
	if ok {
		return r
	}
	if c.jobs == nil {
		c.jobs = make(chan *dynRead, 64)
		for range dynReaders {
			go func() {
				for r := range c.jobs {
					r.run()
				}
			}()
		}
	}
	r = &dynRead{path: path, done: make(chan struct{})}
	c.reads[path] = r
	c.jobs <- r
	return r
}

// run reads the library. A panic of the read is its error: the closure
// then widens, and the application, whose process the layer is a guest
// in, goes on.
func (r *dynRead) run() {
	defer close(r.done)
	defer func() {
		if p := recover(); p != nil {
			r.err = fmt.Errorf("reading the libraries %s needs: panic: %v", r.path, p)
		}
	}()
	searchFault("dynamic " + r.path)
	r.d, r.id, r.err = dynSections.read(r.path)
}

// identities returns the stats of the reads of libs, all done, by path.
func (c *dynCache) identities(libs []Mapping) map[string]fileIdentity {
	ids := make(map[string]fileIdentity, len(libs))
	for _, m := range libs {
		if r, ok := c.reads[m.Path]; ok && r.id.path != "" {
			ids[m.Path] = r.id
		}
	}
	return ids
}

// read returns the library's dynamic section, waiting for its read.
func (c *dynCache) read(path string) (dynInfo, error) {
	r := c.start(path)
	<-r.done
	return r.d, r.err
}

// close lets the readers end once the reads started are done.
func (c *dynCache) close() {
	if c.jobs != nil {
		close(c.jobs)
	}
}

// dynSections keeps, for the process, each library's dynamic section by
// the identity of the file it was read from (device, inode, size, change
// and modification times): a library is read once however many searches
// ask for it (a driver search after an application loaded its own
// plugins finds the same driver libraries), and again if its file is
// replaced or rewritten. Failed reads are not kept.
var dynSections = dynMemo{m: map[fileIdentity]dynInfo{}}

// dynReads counts readDynamic's reads, for tests.
var dynReads atomic.Int64

type dynMemo struct {
	mu sync.Mutex
	m  map[fileIdentity]dynInfo
}

// fileIdentity is what a stat says of a file's identity and content.
type fileIdentity struct {
	path         string
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
}

// statIdentity stats the file at path.
func statIdentity(path string) (fileIdentity, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileIdentity{}, err
	}
	return fileIdentity{path: path, dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, nil
}

// read returns the library's dynamic section, and the stat of its file
// (the zero identity where the stat failed).
func (c *dynMemo) read(path string) (dynInfo, fileIdentity, error) {
	id, err := statIdentity(path)
	if err != nil {
		d, err := readDynamic(path) // says why
		return d, fileIdentity{}, err
	}
	c.mu.Lock()
	d, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		return d, id, nil
	}
	d, err = readDynamic(path)
	if err != nil {
		return d, id, err
	}
	// Kept under the identity stated before the read. A file written
	// while it was read has another identity now (its change time moved),
	// so what was read is found by no later stat; no second stat is
	// needed to keep it out.
	c.mu.Lock()
	c.m[id] = d
	c.mu.Unlock()
	return d, id, nil
}

// readDynamic reads the DT_NEEDED and DT_SONAME strings of the ELF file at
// path as the dynamic loader finds them: the PT_DYNAMIC segment, and the
// strings at DT_STRTAB, read where they lie (libLLVM's string table holds
// megabytes of symbol names). Five or so small reads a library, against
// debug/elf's reading of every section header. A file this reader cannot
// make sense of is read again by debug/elf, which says why it fails.
func readDynamic(path string) (dynInfo, error) {
	dynReads.Add(1)
	if d, err := readDynamicFast(path); err == nil {
		return d, nil
	}
	f, err := elf.Open(path)
	if err != nil {
		return dynInfo{}, fmt.Errorf("reading the libraries %s needs: %w", path, err)
	}
	defer f.Close()
	var d dynInfo
	if d.needed, err = dynStrings(f, elf.DT_NEEDED); err != nil {
		return dynInfo{}, fmt.Errorf("reading the libraries %s needs: %w", path, err)
	}
	if names, err := dynStrings(f, elf.DT_SONAME); err == nil && len(names) > 0 {
		d.soname = names[0]
	}
	return d, nil
}

// dynStrings returns the strings of f's dynamic entries tagged tag, as
// elf.File.DynString does, but reading each string where it lies instead
// of the whole string table: libLLVM's holds megabytes of symbol names,
// and reading them was most of the cost of finding a driver's closure.
func dynStrings(f *elf.File, tag elf.DynTag) ([]string, error) {
	dyn := f.SectionByType(elf.SHT_DYNAMIC)
	if dyn == nil {
		return nil, nil
	}
	if int(dyn.Link) >= len(f.Sections) {
		return nil, errors.New("dynamic section links to no string table")
	}
	strtab := f.Sections[dyn.Link]
	d, err := dyn.Data()
	if err != nil {
		return nil, fmt.Errorf("reading the dynamic section: %w", err)
	}
	var out []string
	for _, off := range dynValues(f, d, tag) {
		s, err := cString(strtab, off)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// dynValues returns the values of the entries tagged tag in the dynamic
// section's data d, up to DT_NULL.
func dynValues(f *elf.File, d []byte, tag elf.DynTag) []uint64 {
	size := 16
	entry := func(b []byte) (elf.DynTag, uint64) {
		return elf.DynTag(f.ByteOrder.Uint64(b)), f.ByteOrder.Uint64(b[8:])
	}
	if f.Class == elf.ELFCLASS32 {
		size = 8
		entry = func(b []byte) (elf.DynTag, uint64) {
			return elf.DynTag(int32(f.ByteOrder.Uint32(b))), uint64(f.ByteOrder.Uint32(b[4:]))
		}
	}
	var out []uint64
	for ; len(d) >= size; d = d[size:] {
		t, v := entry(d)
		if t == elf.DT_NULL {
			break
		}
		if t == tag {
			out = append(out, v)
		}
	}
	return out
}

// cString reads the NUL-terminated string at off in sec.
func cString(sec *elf.Section, off uint64) (string, error) {
	var out []byte
	buf := make([]byte, 64)
	for off < sec.Size {
		n, err := sec.ReadAt(buf, int64(off))
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		if err != nil {
			return "", fmt.Errorf("reading a dynamic string: %w", err)
		}
		out = append(out, buf[:n]...)
		off += uint64(n)
	}
	return "", errors.New("dynamic string runs past its table")
}
