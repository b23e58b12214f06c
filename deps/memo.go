package deps

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"io"
	"io/fs"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/kcache/kcache"
)

// A scan's result depends on its input and on what each stat it made
// returned: the files read and the directories listed are pinned by their
// identities. So a scan is remembered with every stat it made, and a later
// scan of the same input that gets the same answer from each of those
// stats returns the same result without lexing, expanding or reading
// anything: a warm lookup costs one stat per place (ccache's manifest).

// observation is what one stat returned. Its one-byte fields come last,
// side by side: 64 bytes, not 72 with each padded to a word, of which a
// record of 2,500 headers decodes as many in a new process, all fresh
// memory.
type observation struct {
	path  string
	id    identity // for files and directories
	state statState
	// settled says a file or directory was settled when observed: an
	// observation of something too new pins nothing.
	settled bool
}

type statState uint8

const (
	stateMissing statState = iota + 1 // does not exist
	stateFile
	stateDir
	stateOther // another kind of file
	stateError // any other error: compared by kind only
	// stateNotDir: a component of the path is not a directory (ENOTDIR).
	// Missing too, but told apart from stateMissing: clang reads a search
	// directory that is a file as a header map, whose every name maps to
	// another file, so a search directory turned into a file (or created
	// as one) must change what a probe in it observed.
	stateNotDir
)

func observe(path string, fi fs.FileInfo, err error, now time.Time) observation {
	o := observation{path: path}
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		o.state = stateNotDir
	case errors.Is(err, fs.ErrNotExist):
		o.state = stateMissing
	case err != nil:
		o.state = stateError
	case fi.Mode().IsRegular():
		o.state, o.id = stateFile, identityOf(fi)
	case fi.IsDir():
		o.state, o.id = stateDir, identityOf(fi)
	default:
		o.state = stateOther
	}
	o.settled = o.id.settled(now)
	return o
}

// memo is a remembered scan.
type memo struct {
	seen    []observation
	headers []kcache.Header
	// trace is a scan's trace; a memo decoded from a record has its
	// trace in lazy instead (record.go). dependencies returns either.
	trace []Dependency
	lazy  *lazyTrace
	// date says the sources expand __DATE__: the key holds the day.
	date bool
}

// dependencies returns m's trace, which no caller may change.
func (m *memo) dependencies() []Dependency {
	if m.lazy != nil {
		return m.lazy.dependencies(m.seen, m.headers)
	}
	return m.trace
}

// dependencyCount returns the length of m's trace without making it.
func (m *memo) dependencyCount() int {
	if m.lazy != nil {
		return len(m.lazy.deps)
	}
	return len(m.trace)
}

// memoCache holds the last scan of each input. A warm lookup finds its
// memo by a maphash of the input and a full comparison with a copy of the
// input kept beside it: exact, like the SHA-256 of the input (inputID)
// that names records across processes, and several times cheaper, which
// matters because a hit computes it on every call.
type memoCache struct {
	seed  maphash.Seed
	mu    sync.Mutex
	slots map[uint64]*memoSlot // guarded by mu; slots are immutable
	byID  map[kcache.Digest]*memo
	bytes int // the inputs' bytes the slots hold; guarded by mu
	// macros is the last list of compiler macros a slot copied, which
	// the slots of inputs with an equal list share (never changed once
	// kept): a compiler's list is the same for every input of a process,
	// and NVRTC's 158 names made a new process's first lookup of each
	// source copy 2.5 KB.
	macros atomic.Pointer[[]string]
}

// memoSlot is one remembered input and its memo; slots whose inputs hash
// alike are chained.
type memoSlot struct {
	in   Input // a deep copy: the caller may reuse its slices
	wd   string
	memo *memo
	size int
	next *memoSlot
}

// Bounds of the memo cache. Forgetting a memo costs a load of its record
// or a full scan, nothing worse. maxMemos bounds the inputs remembered;
// maxMemoBytes the bytes of their copies (a memo keeps its input to compare
// it): 4096 kernels of 16 KiB, or 64 of 1 MiB.
const (
	maxMemos     = 4096
	maxMemoBytes = 64 << 20
)

func newMemoCache() *memoCache {
	return &memoCache{seed: maphash.MakeSeed(), slots: map[uint64]*memoSlot{}, byID: map[kcache.Digest]*memo{}}
}

// lookup returns the memo of in (wd standing for its working directory),
// or nil, and the hash it is kept under.
func (c *memoCache) lookup(in Input, wd string) (*memo, uint64) {
	h := hashInput(c.seed, in, wd)
	c.mu.Lock()
	sl := c.slots[h]
	c.mu.Unlock()
	// Compared outside the lock: slots never change once made, and a
	// large source takes a while to compare.
	for ; sl != nil; sl = sl.next {
		if sl.wd == wd && sameInput(sl.in, in) {
			return sl.memo, h
		}
	}
	return nil, h
}

// get returns the memo of the input whose id is id, or nil (for tests,
// which name inputs by their ids).
func (c *memoCache) get(id kcache.Digest) *memo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byID[id]
}

// put remembers m as the memo of in, whose hash is h and id is id.
func (c *memoCache) put(h uint64, id kcache.Digest, in Input, wd string, m *memo) {
	size := inputSize(in) + len(wd)
	sl := &memoSlot{in: c.clone(in), wd: wd, memo: m, size: size}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byID) >= maxMemos || c.bytes+size > maxMemoBytes {
		clear(c.slots)
		clear(c.byID)
		c.bytes = 0
	}
	// The chain is rebuilt without in's old slot, so that readers holding
	// the old chain see it whole.
	for old := c.slots[h]; old != nil; old = old.next {
		if old.wd == wd && sameInput(old.in, in) {
			c.bytes -= old.size
			continue
		}
		sl.next = &memoSlot{in: old.in, wd: old.wd, memo: old.memo, size: old.size, next: sl.next}
	}
	c.slots[h] = sl
	c.byID[id] = m
	c.bytes += size
}

// valid reports whether every stat of m answers as it did, and every
// file and directory it pins was settled when the scan saw it. Large
// memos are checked by a few goroutines at once: a stat is a system call
// that mostly waits on locks and the dentry cache, and a record of
// thousands of headers is checked on every new process's first lookup.
func (m *memo) valid(fsys *fileSystem) bool {
	c := &recordCheck{fsys: fsys, now: fsys.now(), seen: m.seen}
	n := len(m.seen)
	if n <= statChunk {
		return validRange(fsys, nil, c.now, m.seen, nil)
	}
	c.spawn((n + statChunk - 1) / statChunk) // every chunk is there: no ready to wait for
	c.wg.Wait()
	return !c.failed.Load()
}

// statChunk is how many stats one goroutine of valid takes at a time:
// large enough that handing out work costs nothing beside the stats,
// small enough that a miss stops the others soon.
const statChunk = 64

// statWorkers bounds the goroutines of one valid: twice the processors,
// so that a stat waiting on the disk leaves the others busy, and at most
// 16, past which stats only contend for the same kernel locks.
func statWorkers() int { return min(2*runtime.GOMAXPROCS(0), 16) }

// validRange checks the observations of seen, giving up early once
// another goroutine found a difference (failed set). With dirs, places
// are stat'd relative to their directories where runs of them share one.
func validRange(fsys *fileSystem, dirs *dirStats, now time.Time, seen []observation, failed *atomic.Bool) bool {
	for i, o := range seen {
		if failed != nil && i%16 == 0 && failed.Load() {
			return false
		}
		var n observation
		if dirs != nil {
			n = dirs.observe(seen, i, now)
		} else {
			n = fsys.observe(o.path, now)
		}
		if !o.holdsAs(n) {
			return false
		}
	}
	return true
}

// holdsAs reports whether n, a stat of o.path now, answers as o did, and
// o pins what it found.
func (o observation) holdsAs(n observation) bool {
	if n.state != o.state || n.state == stateOther {
		// A pipe or a device is never trusted by stat: a scan that meets
		// one refuses the source, and a memo or record from before that
		// rule holds one as if it were absent.
		return false
	}
	return (o.state != stateFile && o.state != stateDir) || (o.settled && o.id == n.id)
}

// inputID identifies everything of in that a scan reads besides the file
// system, wd standing for in.WorkDir: it names the memo of in in this
// process and its dependency record in every process. It hashes every
// field of Input (TestInputIDCoversEveryField fails for a field it
// misses), the working directory, and the record version. PrivateDir
// enters only as being set, and MainDir with it replaced by privateRoot
// (idMainDir): processes whose private directories differ share records.
//
// The fields are encoded into a pooled buffer and hashed in three writes:
// NVRTC's inputs hold 158 compiler macros, and a write per field (two per
// string) cost more than the hashing, about 11 us of a new process's first
// request on the H100. The macros enter by the digest of their list
// (macroListDigest): each of their strings is a cache miss of its own on
// a request's cold caches, 7-10 us of every source's first request.
func inputID(in Input, wd string) kcache.Digest {
	h := sha256.New()
	writeInput(h, in, wd)
	var d kcache.Digest
	h.Sum(d[:0])
	return d
}

// writeInput writes to h what inputID hashes of in.
func writeInput(h io.Writer, in Input, wd string) {
	buf := inputBufs.Get().(*[]byte)
	defer inputBufs.Put(buf)
	b := appendField((*buf)[:0], "kcache/deps-input")
	b = binary.AppendUvarint(b, recordVersion)
	b = appendField(b, scannerBuild())
	b = binary.AppendUvarint(b, uint64(len(in.Source)))
	h.Write(b)
	h.Write(in.Source)
	b = appendField(b[:0], in.Path)
	b = appendField(b, wd)
	b = appendField(b, in.BaseDir)
	b = appendList(b, in.Args)
	b = appendList(b, in.Depends)
	b = appendField(b, idMainDir(in))
	b = appendList(b, in.Builtins)
	b = appendList(b, in.SystemDirs)
	b = appendList(b, in.CompilerHeaders)
	b = binary.AppendUvarint(b, uint64(len(in.CompilerMacros)))
	if len(in.CompilerMacros) > 0 {
		d := macroListDigest(in.CompilerMacros)
		b = append(b, d[:]...)
	}
	b = binary.AppendUvarint(b, uint64(in.Trigraphs))
	b = binary.AppendUvarint(b, uint64(inputFlags(in)))
	h.Write(b)
	*buf = b
}

// macroList is a list of compiler macros and the SHA-256 of its encoding
// (appendList), as macroListDigest last computed it.
type macroList struct {
	// names is a copy of the list's string headers. It keeps the strings
	// alive, so no other string can be allocated at one of their addresses
	// while this is the list hashed last.
	names  []string
	digest kcache.Digest
}

// lastMacroList is the list macroListDigest hashed last: a compiler's list
// is fixed, so a process sees one, or one per backend.
var lastMacroList atomic.Pointer[macroList]

// macroListDigest returns the SHA-256 of l's encoding. It hashes l only
// where it differs from the list hashed last; the comparison reads each
// string's address and length, never its bytes: a Go string's bytes never
// change, so two strings at one address with one length are equal. (The
// string headers of a list are contiguous; the strings' bytes are spread
// over the program's data, one cache miss each.)
func macroListDigest(l []string) kcache.Digest {
	if last := lastMacroList.Load(); last != nil && slices.EqualFunc(last.names, l, sameString) {
		return last.digest
	}
	m := &macroList{names: slices.Clone(l), digest: sha256.Sum256(appendList(nil, l))}
	lastMacroList.Store(m)
	return m.digest
}

// sameString reports whether a and b are one string: the same length at
// the same address.
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// hashInput hashes what sameInput compares, for the memo cache's map,
// encoded as inputID encodes it and hashed in the same few writes (a write
// per field was a fifth of a steady-state hit's time over the floor), but
// for the compiler's macros (appendEnds).
func hashInput(seed maphash.Seed, in Input, wd string) uint64 {
	buf := inputBufs.Get().(*[]byte)
	defer inputBufs.Put(buf)
	var h maphash.Hash
	h.SetSeed(seed)
	b := binary.AppendUvarint((*buf)[:0], uint64(len(in.Source)))
	h.Write(b)
	h.Write(in.Source)
	b = appendField(b[:0], wd)
	b = appendField(b, in.Path)
	b = appendField(b, in.WorkDir)
	b = appendField(b, in.BaseDir)
	b = appendField(b, in.MainDir)
	b = appendField(b, in.PrivateDir)
	b = appendList(b, in.Args)
	b = appendList(b, in.Depends)
	b = appendList(b, in.Builtins)
	b = appendList(b, in.SystemDirs)
	b = appendList(b, in.CompilerHeaders)
	b = appendEnds(b, in.CompilerMacros)
	b = binary.AppendUvarint(b, uint64(in.Trigraphs)<<8|uint64(inputFlags(in)))
	h.Write(b)
	*buf = b
	return h.Sum64()
}

// appendEnds appends l's length and its first and last strings: what
// hashInput takes of the compiler's macros, a list fixed per compiler that
// no two inputs of one process differ in otherwise (NVRTC's 158 names cost
// 2 us a hit to encode). The hash only picks a slot of the memo cache;
// sameInput compares the whole list, so inputs it leaves alike are told
// apart there.
func appendEnds(b []byte, l []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(l)))
	if len(l) > 0 {
		b = appendField(b, l[0])
		b = appendField(b, l[len(l)-1])
	}
	return b
}

// inputBufs holds the buffers inputID and hashInput encode fields into.
var inputBufs = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// appendField appends s, length first.
func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendList appends l's length, then each string with appendField.
func appendList(b []byte, l []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(l)))
	for _, s := range l {
		b = appendField(b, s)
	}
	return b
}

// inputFlags packs in's booleans, one bit each.
func inputFlags(in Input) uint {
	var flags uint
	for i, f := range []bool{in.SearchWorkDir, in.CompleteSearchPath, in.EveryCandidate, in.VerifiesPredefines, in.PrivateDir != "", in.LexesC, in.PredefinesAfterOptions, in.LexesCPlusPlus} {
		if f {
			flags |= 1 << i
		}
	}
	return flags
}

// sameInput reports whether a and b are the same input: every field
// equal (TestSameInputCoversEveryField fails for a field it misses).
func sameInput(a, b Input) bool {
	return bytes.Equal(a.Source, b.Source) &&
		a.Path == b.Path && a.WorkDir == b.WorkDir && a.BaseDir == b.BaseDir && a.MainDir == b.MainDir &&
		a.PrivateDir == b.PrivateDir &&
		a.Trigraphs == b.Trigraphs && a.SearchWorkDir == b.SearchWorkDir &&
		a.CompleteSearchPath == b.CompleteSearchPath && a.EveryCandidate == b.EveryCandidate &&
		a.VerifiesPredefines == b.VerifiesPredefines && a.LexesC == b.LexesC && a.LexesCPlusPlus == b.LexesCPlusPlus &&
		a.PredefinesAfterOptions == b.PredefinesAfterOptions &&
		slices.Equal(a.Args, b.Args) && slices.Equal(a.Depends, b.Depends) &&
		slices.Equal(a.Builtins, b.Builtins) && slices.Equal(a.SystemDirs, b.SystemDirs) &&
		slices.Equal(a.CompilerHeaders, b.CompilerHeaders) && slices.Equal(a.CompilerMacros, b.CompilerMacros)
}

// clone is cloneInput, except that an input's compiler macros equal to
// those of the last input kept share their copy.
func (c *memoCache) clone(in Input) Input {
	macros := in.CompilerMacros
	in.CompilerMacros = nil
	in = cloneInput(in)
	if kept := c.macros.Load(); kept != nil && slices.Equal(*kept, macros) {
		in.CompilerMacros = *kept
		return in
	}
	kept := slices.Clone(macros)
	c.macros.Store(&kept)
	in.CompilerMacros = kept
	return in
}

// cloneInput copies in's slices, which its caller may reuse.
func cloneInput(in Input) Input {
	in.Source = bytes.Clone(in.Source)
	for _, l := range []*[]string{&in.Args, &in.Depends, &in.Builtins, &in.SystemDirs, &in.CompilerHeaders, &in.CompilerMacros} {
		*l = slices.Clone(*l)
	}
	return in
}

// inputSize is about the bytes a copy of in holds.
func inputSize(in Input) int {
	n := len(in.Source) + len(in.Path) + len(in.WorkDir) + len(in.BaseDir) + len(in.MainDir) + len(in.PrivateDir)
	for _, l := range [][]string{in.Args, in.Depends, in.Builtins, in.SystemDirs, in.CompilerHeaders, in.CompilerMacros} {
		for _, s := range l {
			n += len(s) + 16
		}
	}
	return n
}

// PrepareProcess does ahead, on the caller's goroutine, the work that a
// process's first id of an input with like's compiler macros does once:
// reading the program's build information for the scanner's build (13-30
// us, parsed from the binary's module list) and hashing the list of
// macros (a cache miss per name). A caller that names records by
// Identified.WriteID calls it on a goroutine of its own at start, so that
// its first request does not pay for them; calling it is never needed.
func PrepareProcess(like Input) {
	scannerBuild()
	if len(like.CompilerMacros) > 0 {
		macroListDigest(like.CompilerMacros)
	}
}

// scannerBuild names the build of the program the scanner is part of, so
// that a program built from other sources (a scanner with other rules)
// never trusts the records of this one: its module's version, or for a
// development build its VCS revision and whether the tree was modified.
// recordVersion must still change with the scanner's rules, since a
// build of a modified tree keeps its revision.
var scannerBuild = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString(info.Main.Path + "@" + info.Main.Version)
	for _, dep := range info.Deps {
		if dep.Path == "github.com/kcache/kcache" {
			b.WriteString(" kcache@" + dep.Version + dep.Sum)
		}
	}
	for _, s := range info.Settings {
		if strings.HasPrefix(s.Key, "vcs.") {
			b.WriteString(" " + s.Key + "=" + s.Value)
		}
	}
	return b.String()
})

// stat stats path for the scan and remembers the answer for its memo.
func (sc *scan) stat(path string) (fs.FileInfo, error) {
	fi, err := sc.s.fs.statFile(path)
	if sc.private != "" && !sc.probing && under(path, sc.private) {
		sc.unportable = true
	}
	if !sc.observed[path] {
		sc.observed[path] = true
		sc.seen = append(sc.seen, observe(path, fi, err, sc.s.fs.now()))
	}
	return fi, err
}
