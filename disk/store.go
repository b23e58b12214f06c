package disk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/wire"
)

// Options configures a Store. The zero value of every field but Dir is a
// usable default.
type Options struct {
	// Dir is the cache root. Open fails with ErrNoDir when it is empty.
	Dir string
	// MaxSize is the total size in bytes (records and binaries) above which
	// least recently used entries are evicted, in the background; 0 means
	// no size limit. A limit stored in the cache (SetMaxSize) that is
	// larger replaces it: a process may raise the cache's limit for what
	// it evicts, never lower it.
	MaxSize int64
	// EvictTo is the fraction of MaxSize eviction goes down to once it
	// starts; 0 means DefaultEvictTo.
	EvictTo float64
	// AgeThreshold removes entries unused for longer, in the daily
	// maintenance pass; 0 disables age-based eviction.
	AgeThreshold time.Duration
	// EvictionDisabled turns off both kinds of eviction. Leftovers of
	// crashed writers are still cleaned up.
	EvictionDisabled bool
	// MinImageSize and MaxImageSize bound the input image size of keys
	// worth caching: the source's length, since headers are in the key by
	// digest only; 0 means no bound. Put of a key outside them does nothing.
	MinImageSize, MaxImageSize int64
	// LockTimeout bounds waits for the short locks of a write; 0 means
	// DefaultLockTimeout.
	LockTimeout time.Duration
	// BuildWait bounds how long Lock waits for another process's build of
	// the same key; 0 means DefaultBuildWait.
	BuildWait time.Duration
	// Shared makes the cache its group's as well as its user's: what the
	// store creates is group-writable (directories 2770, files 0660,
	// whatever the umask), and a cache directory owned by another user
	// of the cache's group, or writable by that group, is accepted. Only
	// members of the group can then plant a binary; a directory writable
	// by others is still refused.
	Shared bool
	// Logger receives warnings and debug events; nil discards them.
	Logger *slog.Logger
	// Now is the clock for access times and ages; nil means time.Now.
	Now func() time.Time
}

// Defaults for Options.
const (
	// DefaultEvictTo evicts down to half of MaxSize, as the SYCL runtime
	// does. Eviction runs in the background in steps of one shard, so a
	// higher fraction (say 0.9, which keeps more of the cache) costs no
	// caller anything; half is kept as the default the configuration
	// documents.
	DefaultEvictTo = 0.5
	// DefaultLockTimeout bounds waits for short locks. They are held for
	// microseconds, except the size file while a missing total is rebuilt
	// by a walk (about a second per 10^5 entries); a holder stopped for
	// longer is not worth waiting for.
	DefaultLockTimeout = 10 * time.Second
	// DefaultBuildWait bounds a wait for another process's build. JIT builds
	// of large kernels take tens of seconds; past two minutes the other
	// builder is more likely hung than slow, and building here is cheaper
	// than waiting on.
	DefaultBuildWait = 2 * time.Minute
)

// FromConfig returns the Options that c describes. The wait for a file
// lock keeps its default.
func FromConfig(c kcache.Config) Options {
	return Options{
		Dir:              c.Dir,
		MaxSize:          c.MaxSize,
		EvictTo:          c.EvictTo,
		BuildWait:        c.BuildWait,
		AgeThreshold:     c.AgeThreshold,
		EvictionDisabled: c.EvictionDisabled,
		MinImageSize:     c.MinImageSize,
		MaxImageSize:     c.MaxImageSize,
		Shared:           c.Shared,
	}
}

// Store is a persistent cache of built binaries in a directory tree shared
// by every process of the user (see the layout in layout.go). It implements
// kcache.Store and kcache.Locker, and is safe for concurrent use by
// goroutines and processes.
type Store struct {
	root string // the cache root, Options.Dir
	dir  string // root/v<layoutVersion>
	opts Options
	now  func() time.Time
	log  *slog.Logger
	// modes are the permissions of what the store creates.
	modes modes
	// sync makes a write fsync the binary before the record commits it.
	// Tests that build large fixtures turn it off.
	sync bool
	// digests names a key's leaf directory. Tests replace it with a weak
	// hash to force collisions, and set weakDigests, so that lookups of
	// prepared keys use it too.
	digests     func(*kcache.Key) kcache.Digests
	weakDigests bool
	// nextTrim caches, in Unix nanoseconds of the store's clock, when the
	// next maintenance pass is due, so that most Puts skip reading trim.txt.
	nextTrim atomic.Int64
	// lastTotal is the cache's total as this process last read it, for
	// Put's ceiling (see Put).
	lastTotal atomic.Int64
	// flock is flock(2); tests replace it to play a file system that
	// refuses locks.
	flock func(fd, how int) error
	// sizeLockWait is how long a write waits for the size file's lock
	// without seeing the file change (sizeLockWait, the constant). Tests
	// that stop their writers lengthen it: a write waiting across such a
	// stop would take it for a stopped holder's.
	sizeLockWait time.Duration
	// noFlock makes the warning about a file system without locks once.
	noFlock sync.Once
	// bg runs eviction and maintenance off the callers' path (background.go).
	bg     background
	counts workCounts
	// limit is the size this process evicts to, and limitRead when the
	// stored limit was last read, in Unix nanoseconds (limit.go).
	limit, limitRead atomic.Int64
	// owed holds the shards (ints) whose totals missed a write's change
	// because the size file's lock was busy; the background work recounts
	// them (shard.go).
	owed sync.Map
	// refused counts Puts refused at the ceiling and not yet merged into
	// the persistent counters; refusedFlushed is when they last were, in
	// Unix nanoseconds (ceiling.go).
	refused, refusedFlushed atomic.Int64
	// vdir is a handle on dir that lookups open records through, nil where
	// none could be opened (verdir.go).
	vdir atomic.Pointer[dirHandle]
	// hook, when set by a test, is called at named points of a step, of
	// a Put (those start with "put:"), of a removal, of a journal's swap
	// and of a Clear, so that a test can kill a writer there.
	hook func(point string)
}

var (
	_ kcache.Store          = (*Store)(nil)
	_ kcache.Locker         = (*Store)(nil)
	_ kcache.PreparedGetter = (*Store)(nil)
)

// Open opens the cache under opts.Dir, creating it if needed. It fails with
// ErrNoDir when no directory is configured and with ErrUnsafeDir when the
// directory belongs to another user or others may write it; an existing
// cache that cannot be written opens fine, and its Puts fail.
func Open(opts Options) (*Store, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	s := &Store{
		root:         opts.Dir,
		dir:          versionDir(opts.Dir),
		opts:         opts,
		now:          opts.Now,
		log:          opts.Logger,
		sync:         true,
		digests:      (*kcache.Key).Digests,
		flock:        unix.Flock,
		sizeLockWait: sizeLockWait,
		modes:        modesFor(opts.Shared),
	}
	if err := prepareDir(s.root, s.dir, s.modes); err != nil {
		return nil, err
	}
	s.vdir.Store(openDirHandle(s.dir))
	s.refreshLimit(true)
	s.initTotals()
	return s, nil
}

// fill checks opts and sets its defaults.
func (o *Options) fill() error {
	switch {
	case o.Dir == "":
		return ErrNoDir
	case !filepath.IsAbs(o.Dir):
		return fmt.Errorf("disk: cache directory %q is not absolute", o.Dir)
	case !(o.EvictTo >= 0 && o.EvictTo <= 1): // NaN too
		return fmt.Errorf("disk: EvictTo %v is not a fraction in (0, 1]", o.EvictTo)
	case o.MaxSize < 0 || o.MinImageSize < 0 || o.MaxImageSize < 0:
		return errors.New("disk: negative size limit")
	}
	o.Dir = filepath.Clean(o.Dir)
	if o.EvictTo == 0 {
		o.EvictTo = DefaultEvictTo
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.BuildWait <= 0 {
		o.BuildWait = DefaultBuildWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Dir returns the cache root.
func (s *Store) Dir() string { return s.root }

// errMiss is what Get returns when no slot holds the key.
var errMiss = fmt.Errorf("disk: no entry: %w", kcache.ErrMiss)

// Get returns the entry for key. Anything it cannot verify (a missing,
// truncated, damaged or unreadable file, a checksum mismatch) is a miss: the
// error wraps kcache.ErrMiss, and the cause too where there is one. A hit
// writes nothing, except the entry's access time at most once an hour.
func (s *Store) Get(ctx context.Context, key *kcache.Key) (kcache.Entry, error) {
	return s.GetPrepared(ctx, key.Prepare())
}

// GetPrepared is Get for a key whose encoding and digests the caller has
// computed already (kcache.PreparedGetter).
func (s *Store) GetPrepared(ctx context.Context, p *kcache.Prepared) (kcache.Entry, error) {
	h, err := s.find(ctx, p)
	if err != nil {
		return kcache.Entry{}, err
	}
	s.touch(h.path, h.mtime)
	return kcache.Entry{Binary: h.bin, BuildTime: time.Duration(h.rec.buildTime)}, nil
}

// found is an entry read and checked by find.
type found struct {
	path  string // of the record
	mtime time.Time
	rec   rawRecord
	bin   []byte
}

// find looks a prepared key up in every slot of its leaf. The leaf's path
// is built on the stack, NUL-terminated for open(2) (openReadZ), and a
// slot's record is opened below the store's handle on the version
// directory (verdir.go): a hit makes one string of the path, the found
// record's, where building the leaf, the slot's name and the system
// call's copy made five, and the kernel walks the leaf's names only (a new
// process's first request makes two lookups, each with caches cold).
func (s *Store) find(ctx context.Context, p *kcache.Prepared) (found, error) {
	if err := ctx.Err(); err != nil {
		return found{}, fmt.Errorf("disk: %w: %w", kcache.ErrMiss, err)
	}
	want := p.Encoding()
	var stack [320]byte
	leaf := appendLeaf(stack[:0], s.dir, s.preparedDigests(p))
	rel := len(s.dir) + 1 // where the path below the version directory starts
	h := s.vdir.Load()
	now := s.now()
	for n := range maxSlots {
		pz := appendSlotZ(leaf, n)
		path := string(pz[:len(pz)-1])
		f, err := readSlotZ(h, path, pz, rel, want, now)
		if n == 0 && h != nil && errors.Is(err, fs.ErrNotExist) && h.stale(s.dir) {
			s.renewDirHandle(h)
			h = nil // by path, for the rest of this lookup
			f, err = readSlotZ(nil, path, pz, rel, want, now)
		}
		switch {
		case err == nil:
			return f, nil
		case isOwnDamage(err):
			if _, serr := os.Lstat(path); errors.Is(serr, fs.ErrNotExist) {
				return found{}, errMiss // evicted or deleted while read: no damage
			}
			s.log.Warn("kcache: damaged cache entry ignored", "path", path, "err", err)
			return found{}, fmt.Errorf("disk: %w", err)
		case errors.Is(err, errOtherKey), errors.Is(err, fs.ErrNotExist):
			continue // a collision, or an empty slot before a used one
		case errors.Is(err, kcache.ErrMiss):
			s.log.Warn("kcache: damaged cache entry ignored", "path", path, "err", err)
			continue // a damaged record could belong to anyone
		default:
			return found{}, fmt.Errorf("disk: %w: %w", kcache.ErrMiss, err)
		}
	}
	return found{}, errMiss
}

// errOtherKey says a slot holds a sound record for a different key.
var errOtherKey = errors.New("disk: slot holds another key")

// preparedDigests returns the digests that name p's leaf: p's own, unless
// a test replaced the store's digest function.
func (s *Store) preparedDigests(p *kcache.Prepared) kcache.Digests {
	if s.weakDigests {
		return s.digests(p.Key())
	}
	return p.Digests()
}

// readSlot reads slot n of leaf and returns its entry if it holds the key
// encoded as want and its binary checks out. An entry of version 2 is one
// file; one of version 1 has its binary in the .bin beside the record.
// now is the store's clock, which decides whether the entry's access time
// must be read (entryMtime).
func readSlot(leaf string, n int, want []byte, now time.Time) (found, error) {
	path := srcPath(leaf, n)
	return readSlotZ(nil, path, append([]byte(path), 0), 0, want, now)
}

// readSlotZ is readSlot for the slot's record at path, which pz holds
// NUL-terminated, opened through the version directory's handle h where
// it is not nil (openSlot).
func readSlotZ(h *dirHandle, path string, pz []byte, rel int, want []byte, now time.Time) (found, error) {
	fd, err := openSlot(h, pz, rel)
	if err != nil {
		return found{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	data, mtime, err := readEntryFile(fd, path)
	if err != nil {
		return found{}, err
	}
	rec, bin, err := parseEntry(data)
	if err != nil {
		return found{}, err
	}
	if string(rec.key) != string(want) {
		return found{}, errOtherKey
	}
	if !rec.embedded {
		// Below the same handle as the record: a Clear elsewhere may have
		// put another entry at the path since.
		bin, err = readBinaryAt(h, strings.TrimSuffix(path, srcSuffix)+binSuffix, rel, &rec)
	} else if !rec.checkCRC(bin) {
		err = &kcache.DecodeError{What: "binary", Reason: "size or checksum mismatch"}
	}
	if err != nil {
		return found{}, &binaryError{err} // the key's entry, damaged
	}
	if mtime.IsZero() {
		if mtime, err = entryMtime(fd, path, &rec, now); err != nil {
			return found{}, err
		}
	}
	return found{path: path, mtime: mtime, rec: rec, bin: bin}, nil
}

// entryMtime returns what touch needs to know of the entry open at fd: its
// modification time, or, for an entry written within mtimeInterval of now,
// the time it was written, which spares a hit the fstat. A Put stamps the
// file with the time it records as created (Import with now, later still),
// so for such an entry touch decides as it would on the file's own time.
func entryMtime(fd int, path string, rec *rawRecord, now time.Time) (time.Time, error) {
	created := time.Unix(0, rec.created)
	if d := now.Sub(created); d < mtimeInterval && d > -mtimeInterval {
		return created, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return time.Time{}, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	return time.Unix(st.Mtim.Unix()), nil
}

// entryBufSize is the buffer a hit reads an entry into: one read takes a
// whole entry of a small module (a 10 KB CUBIN and its key), with no
// fstat to size the buffer first. A file that fills it is sized by fstat
// and read to its end, as readFile reads.
const entryBufSize = 64 << 10

// entryBufs holds buffers of entryBufSize for readEntryFile. They are
// kept across garbage collections, as a sync.Pool's are not: a process
// that reads large entries collects every few hits, and each would then
// allocate a fresh buffer (WarmLookup/800KiB on the H100, medians of five
// rounds: 235 us with fstat first, 275 with a sync.Pool, 260 with this).
var entryBufs = make(chan *[]byte, 8)

// entryBuf returns a buffer of entryBufSize, kept or new.
func entryBuf() *[]byte {
	select {
	case b := <-entryBufs:
		return b
	default:
		b := make([]byte, entryBufSize)
		return &b
	}
}

// keepEntryBuf keeps b for a later read, unless enough are kept.
func keepEntryBuf(b *[]byte) {
	select {
	case entryBufs <- b:
	default:
	}
}

// readEntryFile reads the .src file open at fd and returns a copy of its
// content; mtime is the file's modification time where it took an fstat
// (a file of entryBufSize or more), else zero. An entry whose header says
// it is complete ends the reading: on a local file system that is the
// first read, its end of file. So does a file whose first bytes are not a
// record's (notRecord).
func readEntryFile(fd int, path string) (data []byte, mtime time.Time, err error) {
	bufp := entryBuf()
	defer keepEntryBuf(bufp)
	buf := *bufp
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, time.Time{}, &kcache.DecodeError{What: "file", Reason: fmt.Sprintf("%s: read: %v", path, err)}
		}
		if m == 0 {
			return bytes.Clone(buf[:n]), time.Time{}, nil
		}
		n += m
		if total, ok := entryLength(buf[:n]); (ok && int64(n) >= total) || notRecord(buf[:n]) {
			return bytes.Clone(buf[:n]), time.Time{}, nil
		}
	}
	return readRest(fd, path, buf[:n])
}

// readRest reads a file that filled readEntryFile's buffer (head, what was
// read) to its end, sized by fstat as readFile does, or to one byte past
// the length its header states (readLimit). A header longer than the head
// (the key of a large source) is read on in doubling steps until it
// states that length, so that a file extended by damage is never read
// whole.
func readRest(fd int, path string, head []byte) ([]byte, time.Time, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, time.Time{}, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxEntrySize || st.Size < int64(len(head)) {
		return nil, time.Time{}, &kcache.DecodeError{What: "file", Reason: fmt.Sprintf("%s: not a regular file of at most %d bytes", path, int64(maxEntrySize))}
	}
	b := head
	for {
		limit := nextRead(b, st.Size)
		if limit <= int64(len(b)) {
			// All of it, or a header no record has: parseEntry says which.
			return b, time.Unix(st.Mtim.Unix()), nil
		}
		next := make([]byte, limit)
		copy(next, b)
		if err := readFull(fd, path, next[len(b):]); err != nil {
			return nil, time.Time{}, err
		}
		b = next
	}
}

// nextRead returns how much of a .src file of size bytes to have read,
// given its first bytes head: one byte past the entry's length once the
// header states it (readLimit); twice head while the header runs on past
// it; len(head) where there is nothing more worth reading (no record's
// start, or a header longer than any record's).
func nextRead(head []byte, size int64) int64 {
	n := int64(len(head))
	switch _, known := entryLength(head); {
	case known:
		return readLimit(head, size)
	case notRecord(head) || n > maxRecordSize:
		return n
	default:
		return min(size, 2*n)
	}
}

// readLimit returns how much of a .src file of size bytes whose first
// bytes are head to read: all of it, or, where head states the entry's
// length, one byte past it, which tells a file extended by damage
// (however large, and sparse) without reading the extension.
func readLimit(head []byte, size int64) int64 {
	if total, ok := entryLength(head); ok && total < size {
		return max(total+1, int64(len(head)))
	}
	return size
}

// notRecord reports whether head, the start of a .src file, shows it is no
// record: such a file is damage whatever follows, and is not read further
// (a file extended or zeroed by damage may be tens of GiB, sparse).
func notRecord(head []byte) bool {
	n := min(len(head), len(recordMagic))
	return string(head[:n]) != recordMagic[:n]
}

// entryLength returns the length of the .src file whose first bytes are
// head, as its header states it (a version 2 entry: its record, then its
// binary; a version 1 record: itself), or false while head is too short
// to say, or is no record. It trusts nothing: parseEntry and the checksums
// judge what was read.
func entryLength(head []byte) (int64, bool) {
	if len(head) < len(recordMagic) || string(head[:len(recordMagic)]) != recordMagic {
		return 0, false
	}
	p := wire.NewDecoder(head[len(recordMagic):])
	version := p.Uvarint()
	p.Bytes() // the key
	size := p.Uvarint()
	p.Fixed(32 + 4) // SHA-256 and CRC-32C
	p.Varint()      // build time
	p.Varint()      // created
	p.Fixed(4)      // the record's check
	if !p.OK || size > maxBinarySize {
		return 0, false
	}
	n := int64(len(head) - len(p.Buf))
	if version == entryVersion {
		n += int64(size)
	}
	return n, true
}

// readBinaryAt reads the binary rec describes, at path, opened through
// the version directory's handle h where it is not nil (openSlot; rel is
// where path's part below the version directory starts), and checks its
// length and CRC-32C. Any mismatch is a *kcache.DecodeError.
func readBinaryAt(h *dirHandle, path string, rel int, rec *rawRecord) ([]byte, error) {
	fd, err := openSlot(h, append([]byte(path), 0), rel)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	bin, _, err := readFD(fd, path, rec.size)
	if err != nil {
		return nil, err
	}
	if !rec.checkCRC(bin) {
		return nil, &kcache.DecodeError{What: "binary", Reason: "size or checksum mismatch"}
	}
	return bin, nil
}

// readFile reads a whole file of at most limit bytes and returns it with
// its modification time. It takes one open, one fstat, one read and one
// close: the fstat gives the length (files here are replaced, never written
// in place) and the access time. Bare system calls, not os.Open, which on
// Linux also tries to register every file with the network poller and
// sets a finalizer: on a hit that is a sixth of the system calls.
func readFile(path string, limit int64) ([]byte, time.Time, error) {
	fd, err := openRead(path)
	if err != nil {
		return nil, time.Time{}, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return readFD(fd, path, limit)
}

// smallFileLimit bounds the small files of the cache's root and version
// directory a store reads whole (max-size, trim.txt, counters.txt): a
// counter line per name, far below it.
const smallFileLimit = 1 << 20

// readSmallFile reads one of those files (readFile, so that a FIFO or a
// device planted there is refused, not waited on or read without end).
func readSmallFile(path string) ([]byte, error) {
	b, _, err := readFile(path, smallFileLimit)
	return b, err
}

// readFD is readFile's read of the open file fd.
func readFD(fd int, path string, limit int64) ([]byte, time.Time, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, time.Time{}, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > limit {
		return nil, time.Time{}, &kcache.DecodeError{What: "file", Reason: fmt.Sprintf("%s: not a regular file of at most %d bytes", path, limit)}
	}
	b := make([]byte, st.Size)
	if err := readFull(fd, path, b); err != nil {
		return nil, time.Time{}, err
	}
	return b, time.Unix(st.Mtim.Unix()), nil
}

// readFull fills b from fd; an end of file before that is a
// *kcache.DecodeError.
func readFull(fd int, path string, b []byte) error {
	for done := 0; done < len(b); {
		n, err := unix.Read(fd, b[done:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return &kcache.DecodeError{What: "file", Reason: fmt.Sprintf("%s: short read: %v", path, err)}
		}
		done += n
	}
	return nil
}

// readFlags open a file of the cache for reading. O_NONBLOCK makes the
// open of a FIFO planted where a file goes return at once, where it would
// wait for a writer for ever; its reads then find nothing, which is a
// miss. It changes nothing for a regular file.
const readFlags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK

// openReadZ opens the file whose NUL-terminated path is pz, relative to
// the directory open at dirfd (or unix.AT_FDCWD), for reading (readFlags):
// unix.Openat, less the copy of a path string it makes to terminate it.
func openReadZ(dirfd int, pz []byte) (int, error) {
	if len(pz) == 0 || pz[len(pz)-1] != 0 || bytes.IndexByte(pz[:len(pz)-1], 0) >= 0 {
		return -1, unix.EINVAL
	}
	for {
		fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&pz[0])),
			uintptr(readFlags), 0, 0, 0)
		switch errno {
		case 0:
			return int(fd), nil
		case unix.EINTR:
			continue
		default:
			return -1, errno
		}
	}
}

// openRead opens the file at path for reading (readFlags).
func openRead(path string) (int, error) {
	for {
		fd, err := unix.Open(path, readFlags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// mtimeInterval is how stale an entry's access time may get before a hit
// refreshes it. Eviction needs only a rough order, and ages are counted in
// days, so an hour of imprecision costs nothing; in exchange a warm cache
// read by many processes is written at most once an hour per entry instead
// of on every hit. (Go's build cache made the same trade.)
const mtimeInterval = time.Hour

// touch records a use of the entry whose record is at path and was last
// marked at mtime.
func (s *Store) touch(path string, mtime time.Time) {
	now := s.now()
	// A time in the future (a clock set back) is refreshed too: it would
	// otherwise stay until the clock caught up.
	if d := now.Sub(mtime); d < mtimeInterval && d > -mtimeInterval {
		return
	}
	// Best effort: on a read-only cache this fails, and the entry merely
	// looks older to eviction than it is.
	_ = os.Chtimes(path, now, now)
}

// admits reports whether key's image is within the size limits.
func (s *Store) admits(key *kcache.Key) bool {
	n := imageSize(key)
	return n >= s.opts.MinImageSize && (s.opts.MaxImageSize == 0 || n <= s.opts.MaxImageSize)
}

// Put stores e for key. A key outside the image size limits, or an entry
// larger than eviction's target, is not stored, and Put returns nil; so is
// an entry that would take the cache past its ceiling, 1.1 x MaxSize, when
// eviction is behind and the Put cannot catch it up (see payOwed). An
// error means the binary is not cached (a read-only
// or full disk, a lock that stayed busy); the caller goes on with the binary
// it has.
//
// The binary is written to a temporary file and renamed into place, then
// the record likewise: the record is the commit. A sound entry already
// present for key is kept. Put does not wait for eviction: when the cache
// is over MaxSize, it starts eviction in the background and returns. Only a
// Put that finds the cache at its ceiling with nobody evicting runs one
// bounded eviction step itself, since the processes that left the cache
// there (short ones that exit right after their Put) never will.
func (s *Store) Put(ctx context.Context, key *kcache.Key, e kcache.Entry) error {
	if !s.admits(key) {
		s.log.Debug("kcache: image outside the cache's size limits, not stored", "size", imageSize(key))
		return nil
	}
	s.refreshLimit(false)
	enc, _ := key.MarshalBinary()
	raw := newRawRecord(enc, e.Binary, e.BuildTime, s.now())
	file := raw.marshalEntry(e.Binary)
	size := int64(len(file))
	if s.limited() && size > s.target() {
		s.log.Debug("kcache: entry larger than the cache's eviction target, not stored", "size", size)
		return nil
	}
	d := s.digests(key)
	commit := func() (int64, int, error) {
		return s.commit(ctx, idFor(d), s.leafDir(d), raw.key, file)
	}
	paid := false
	if s.limited() && s.lastTotal.Load()+size > s.ceiling() {
		// Eviction is behind the writers: storing would take the cache
		// past its bound, unless this Put does the eviction owed.
		if paid = true; !s.payOwed(ctx) {
			s.refuse(ctx, s.lastTotal.Load())
			return nil
		}
	}
	total, unknown, err := commit()
	if errors.Is(err, errOverCeiling) && !paid && s.payOwed(ctx) {
		total, unknown, err = commit()
	}
	if errors.Is(err, errOverCeiling) {
		s.refuse(ctx, total)
		return nil
	}
	if err != nil {
		return fmt.Errorf("disk: put: %w", err)
	}
	s.afterWrite(total, unknown)
	return nil
}

// idFor returns the leaf name of a key with digests d.
func idFor(d kcache.Digests) leafID {
	var id leafID
	const w = digestHexLen / 2
	copy(id[:w], d.Device[:w])
	copy(id[w:], d.Image[:w])
	copy(id[2*w:], d.Spec[:w])
	copy(id[3*w:], d.Options[:w])
	return id
}

// commit writes an entry, file (record and binary), into leaf under the
// leaf's lock and accounts for it. It returns the cache's total after the
// write and how many shard totals are unknown (total is -1 when nothing
// changed).
func (s *Store) commit(ctx context.Context, id leafID, leaf string, key, file []byte) (total int64, unknown int, err error) {
	unlock, err := s.lockLeaf(ctx, leaf, true, s.opts.LockTimeout)
	if err != nil {
		return 0, 0, err
	}
	defer unlock()
	s.at("put:locked")
	n, present, err := s.chooseSlot(leaf, key)
	if err != nil || present {
		return -1, 0, err
	}
	s.at("put:slot")
	// Only a committed entry (one with a record) was ever counted: a binary
	// a dead writer left without its record was not, and is not subtracted.
	old := committedSize(leaf, n)
	delta := int64(len(file)) - old
	// The journal learns of the leaf before its entry exists: a writer
	// killed after the commit leaves an entry eviction can still find, and
	// one killed before it leaves a count the shard's next step corrects.
	ceiling := int64(0)
	if s.limited() {
		ceiling = s.ceiling()
	}
	total, unknown, aerr := s.account(ctx, id, delta, ceiling)
	s.at("put:counted")
	if errors.Is(aerr, errOverCeiling) {
		return total, unknown, aerr
	}
	if aerr != nil {
		s.log.Debug("kcache: cache size not updated", "err", aerr)
	}
	// Uncommit whatever the slot held, then remove the binary of a
	// version 1 entry there, so that the slot holds nothing but the new
	// entry's one file. The file is synced before its rename commits it.
	err = removeIfExists(srcPath(leaf, n))
	if err == nil {
		err = removeIfExists(binPath(leaf, n))
	}
	if err == nil {
		err = s.modes.writeFile(leaf, srcPath(leaf, n), file, s.sync, s.now(), func() { s.at("put:staged") })
	}
	if err != nil {
		// The slot now holds nothing committed: undo the count, the old
		// entry's bytes included.
		if aerr == nil {
			s.account(ctx, id, -(delta + old), 0)
		}
		return 0, 0, err
	}
	if aerr != nil {
		return -1, 0, nil
	}
	return total, unknown, nil
}

// committedSize is what slot n of leaf counts for in the totals: its record
// and binary (a .bin of version 1 if there is one) if it has a record,
// else nothing.
func committedSize(leaf string, n int) int64 {
	src, err := os.Lstat(srcPath(leaf, n))
	if err != nil {
		return 0
	}
	return src.Size() + fileSize(binPath(leaf, n))
}

// chooseSlot picks the slot for key in leaf: the one holding key's entry
// (present reports that entry sound, so there is nothing to write), else the
// first empty or damaged one. The caller holds the leaf's lock.
func (s *Store) chooseSlot(leaf string, key []byte) (n int, present bool, err error) {
	free := -1
	for i := range maxSlots {
		h, err := readSlot(leaf, i, key, s.now())
		switch {
		case err == nil:
			s.touch(h.path, h.mtime) // storing it again is a use
			return i, true, nil
		case errors.Is(err, errOtherKey):
			continue
		case isOwnDamage(err):
			return i, false, nil // key's entry, damaged: replace it
		}
		if free < 0 {
			free = i // empty, or damaged beyond telling whose it was
		}
	}
	if free < 0 {
		return 0, false, fmt.Errorf("%w: %s", ErrCollision, leaf)
	}
	return free, false, nil
}

// binaryError reports a slot that holds the key's record but whose binary is
// missing, unreadable or fails its check. It is a miss.
type binaryError struct{ err error }

func (e *binaryError) Error() string   { return "entry's binary: " + e.err.Error() }
func (e *binaryError) Unwrap() []error { return []error{kcache.ErrMiss, e.err} }

// isOwnDamage reports whether a readSlot error says the slot holds the key's
// record with a bad binary.
func isOwnDamage(err error) bool {
	var b *binaryError
	return errors.As(err, &b)
}

// Delete removes key's entry, if any. Removing what is not there is not an
// error.
func (s *Store) Delete(ctx context.Context, key *kcache.Key) error {
	p := key.Prepare()
	want := p.Encoding()
	d := s.preparedDigests(p)
	leaf := s.leafDir(d)
	unlock, err := s.lockLeaf(ctx, leaf, false, s.opts.LockTimeout)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("disk: delete: %w", err)
	}
	defer unlock()
	var freed int64
	var errs []error
	for n := range maxSlots {
		if _, err := readSlot(leaf, n, want, s.now()); err == nil || isOwnDamage(err) {
			f, err := s.removeSlot(leaf, n)
			freed += f
			errs = append(errs, err)
		}
	}
	// Accounted under the leaf's lock, like every change, so that a step
	// listing this leaf counts the removal exactly once.
	if freed > 0 {
		if _, _, err := s.account(ctx, idFor(d), -freed, 0); err != nil {
			s.log.Debug("kcache: cache size not updated", "err", err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("disk: delete: %w", err)
	}
	return nil
}

// removeSlot removes slot n of leaf, record first so that the entry is
// uncommitted before its binary goes, and returns the bytes freed as the
// totals count them: the record and binary of a committed entry, nothing
// for a leftover. The caller holds the leaf's lock. Passes ignore the
// error: what stays behind is found again by the next one.
func (s *Store) removeSlot(leaf string, n int) (int64, error) {
	counted := committedSize(leaf, n)
	for i, p := range [...]string{srcPath(leaf, n), binPath(leaf, n)} {
		if i == 1 {
			s.at("remove:uncommitted")
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if p == binPath(leaf, n) {
				return counted, err // the record is gone: uncounted already
			}
			return 0, err
		}
	}
	return counted, nil
}

// fileSize returns the size of the file at path, 0 if there is none.
func fileSize(path string) int64 {
	info, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// writeFile writes data to a temporary file in dir and renames it to path,
// so that path names either its old content or all of data. It fsyncs the
// data first if sync is set, and stamps the file with mtime if that is set.
// staged, if set, is called between the write and the rename (a test
// kills the writer there).
func (m modes) writeFile(dir, path string, data []byte, sync bool, mtime time.Time, staged func()) (err error) {
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return err
	}
	if err := m.fix(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(f.Name(), mtime, mtime); err != nil {
			return err
		}
	}
	if staged != nil {
		staged()
	}
	return os.Rename(f.Name(), path)
}
