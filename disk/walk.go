package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kcache/kcache"
)

// Info describes one slot of the cache, as Walk finds it.
type Info struct {
	Dir        string         // the key's leaf directory
	Slot       int            // n in <n>.src and <n>.bin
	Key        *kcache.Key    // nil when the record is missing or does not decode
	Digests    kcache.Digests // the key's digests; zero when Key is nil
	Size       int64          // bytes on disk: record and binary
	BinarySize int64          // length of the binary
	BuildTime  time.Duration  // what the build cost
	Created    time.Time      // when the entry was written
	AccessTime time.Time      // last use, to within an hour: the record's mtime
	Err        error          // nil for a sound entry, else wraps ErrDamaged, ErrIncomplete or ErrUnreadable
	// embedded says the binary is in the record's file (entry version 2).
	embedded bool
}

// OK reports whether the entry is sound as far as it was checked.
func (i *Info) OK() bool { return i.Err == nil }

// RecordPath returns the path of the entry's record (.src).
func (i *Info) RecordPath() string { return srcPath(i.Dir, i.Slot) }

// BinaryPath returns the path of the file that holds the entry's binary:
// the record's own (.src) for entries written since the binary moved into
// it, the .bin beside it for older ones.
func (i *Info) BinaryPath() string {
	if i.embedded {
		return srcPath(i.Dir, i.Slot)
	}
	return binPath(i.Dir, i.Slot)
}

// Walk calls fn for every slot holding a record or a binary, in path order,
// and stops at the first error fn returns, returning it. It checks each
// record and that its binary has the recorded length, but does not read
// binaries: Verify does. Walk takes no lock; entries written or removed
// while it runs may or may not be seen. What it cannot read (a directory
// another user left, a file where a directory should be) it skips, with a
// warning; Verify lists it.
func (s *Store) Walk(ctx context.Context, fn func(Info) error) error {
	var sk skipped
	defer sk.warn(s)
	return s.eachLeaf(ctx, &sk, func(leaf string) error {
		c, err := listLeaf(leaf)
		if err != nil {
			sk.add(leaf, err)
			return nil
		}
		for n := range maxSlots {
			if c.slots[n].used() {
				if err := fn(s.inspect(leaf, n, c.slots[n], false)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// inspect checks slot n of leaf; deep also reads the binary and checks its
// checksums.
func (s *Store) inspect(leaf string, n int, f slotFiles, deep bool) Info {
	in := Info{Dir: leaf, Slot: n}
	if f.src != nil {
		in.AccessTime = f.src.ModTime()
		in.Size += f.src.Size()
	}
	if f.bin != nil {
		in.BinarySize = f.bin.Size()
		in.Size += f.bin.Size()
	}
	if f.src == nil {
		in.Err = fmt.Errorf("%w: binary without record", ErrIncomplete)
		return in
	}
	e, err := readEntry(in.RecordPath(), deep)
	if err != nil {
		in.Err = fmt.Errorf("%w: %w", damageOf(err), err)
		return in
	}
	if e.raw.embedded {
		in.BinarySize = e.raw.size
		in.embedded = true
	}
	in.Key, in.BuildTime, in.Created = &e.rec.Key, e.rec.BuildTime, e.rec.Created
	in.Digests = s.digests(in.Key)
	in.Err = checkSlot(in, s.leafDir(in.Digests), e, f, deep)
	return in
}

// checkSlot checks a decoded slot against its place and its binary.
func checkSlot(in Info, want string, e entryFile, f slotFiles, deep bool) error {
	raw := &e.raw
	switch {
	case want != in.Dir:
		return fmt.Errorf("%w: record for another directory (%s)", ErrDamaged, want)
	case raw.embedded:
		return checkEmbedded(e, f, deep)
	case f.bin == nil:
		return fmt.Errorf("%w: record without binary", ErrDamaged)
	case f.bin.Size() != raw.size:
		return fmt.Errorf("%w: binary is %d bytes, record says %d", ErrDamaged, f.bin.Size(), raw.size)
	case !deep:
		return nil
	}
	bin, _, err := readFile(in.BinaryPath(), raw.size)
	if err != nil {
		return fmt.Errorf("%w: %w", damageOf(err), err)
	}
	if !raw.checkSHA256(bin) || !raw.checkCRC(bin) {
		return fmt.Errorf("%w: binary checksum mismatch", ErrDamaged)
	}
	return nil
}

// damageOf returns what a failure to read an entry's file says of the
// entry: nothing, where this user may not read it (another member's file
// in a shared cache, written without shared mode), which is
// ErrUnreadable, for its owner may read it whole; else ErrDamaged.
func damageOf(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return ErrUnreadable
	}
	return ErrDamaged
}

// checkEmbedded checks the binary of a version 2 entry: its length always,
// its checksums when deep (readEntry then read all of it).
func checkEmbedded(e entryFile, f slotFiles, deep bool) error {
	switch {
	case f.bin != nil:
		// Put removes a slot's .bin before it writes an entry of version 2.
		return fmt.Errorf("%w: a binary file beside a record that holds its binary", ErrDamaged)
	case e.binSize != e.raw.size:
		return fmt.Errorf("%w: binary is %d bytes, record says %d", ErrDamaged, e.binSize, e.raw.size)
	case deep && (!e.raw.checkSHA256(e.bin) || !e.raw.checkCRC(e.bin)):
		return fmt.Errorf("%w: binary checksum mismatch", ErrDamaged)
	}
	return nil
}

// entryFile is a .src file as readEntry read it.
type entryFile struct {
	raw rawRecord
	rec Record
	// bin is the binary of a version 2 entry: all of it when read whole,
	// else what of it the head held. binSize is its length in the file.
	bin     []byte
	binSize int64
}

// headSize is how much of a .src file readEntry reads when it needs only
// the record: every record but those of very large sources.
const headSize = 64 << 10

// readEntry reads and fully decodes the record at path. Unless whole is
// set, it reads only the file's head where that holds the record, so that
// listing a cache does not read its binaries.
func readEntry(path string, whole bool) (entryFile, error) {
	data, size, err := readHead(path, headSize)
	if err != nil {
		return entryFile{}, err
	}
	raw, bin, err := parseEntry(data)
	// The record may run past the head, or the caller wants the binary:
	// read on, as far as nextRead says is worth it, as a lookup does.
	for (err != nil || whole) && size > int64(len(data)) {
		limit := nextRead(data, size)
		if limit <= int64(len(data)) {
			break
		}
		if data, size, err = readHead(path, limit); err != nil {
			return entryFile{}, err
		}
		raw, bin, err = parseEntry(data)
	}
	if err != nil {
		return entryFile{}, err
	}
	rec, err := raw.decodeKey()
	if err != nil {
		return entryFile{}, err
	}
	e := entryFile{raw: raw, rec: rec, bin: bin}
	e.binSize = int64(len(bin)) + size - int64(len(data))
	return e, nil
}

// readHead reads at most limit bytes from the start of the regular file at
// path, and returns them with the file's size.
func readHead(path string, limit int64) ([]byte, int64, error) {
	// Not blocking: a FIFO's open would wait for a writer (readFlags).
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, &kcache.DecodeError{What: "file", Reason: path + ": not a regular file"}
	}
	b := make([]byte, min(fi.Size(), limit))
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, 0, &kcache.DecodeError{What: "file", Reason: fmt.Sprintf("%s: short read: %v", path, err)}
	}
	return b, fi.Size(), nil
}

// readRecord reads and fully decodes the record at path.
func readRecord(path string) (rawRecord, Record, error) {
	e, err := readEntry(path, false)
	return e.raw, e.rec, err
}

// slotFiles holds what Lstat said of a slot's two files; nil when absent.
type slotFiles struct{ src, bin fs.FileInfo }

func (f slotFiles) used() bool { return f.src != nil || f.bin != nil }

// size is the slot's bytes on disk.
func (f slotFiles) size() int64 {
	var n int64
	if f.src != nil {
		n += f.src.Size()
	}
	if f.bin != nil {
		n += f.bin.Size()
	}
	return n
}

// leafContents is what a leaf directory holds.
type leafContents struct {
	slots [maxSlots]slotFiles
	temps []string // names of temporary files
}

// committed is what the leaf counts for in the totals: the record and
// binary of every slot that has a record (see committedSize).
func (c *leafContents) committed() int64 {
	var n int64
	for _, f := range c.slots {
		if f.src != nil {
			n += f.size()
		}
	}
	return n
}

// listLeaf lists a leaf directory and stats its slot files.
func listLeaf(leaf string) (leafContents, error) {
	var c leafContents
	names, err := readNames(leaf)
	if err != nil {
		return c, err
	}
	for _, name := range names {
		if strings.HasPrefix(name, tempPrefix) {
			c.temps = append(c.temps, name)
			continue
		}
		n, suffix, ok := parseSlotName(name)
		if !ok {
			continue
		}
		info, err := os.Lstat(leaf + "/" + name)
		if err != nil {
			continue
		}
		if suffix == srcSuffix {
			c.slots[n].src = info
		} else {
			c.slots[n].bin = info
		}
	}
	return c, nil
}

// eachLeaf calls fn for every leaf directory, in path order, and adds what
// it cannot list to sk.
func (s *Store) eachLeaf(ctx context.Context, sk *skipped, fn func(leaf string) error) error {
	return eachLevel(ctx, s.dir, levels, sk, fn)
}

// walkers is how many goroutines list directories in a pass. A pass is
// almost all system calls (open, getdents, close, lstat: about 14 per
// entry), which run in parallel in the kernel; on 2 cores 4 walkers halve
// a pass over 10^5 entries.
var walkers = max(4, 2*runtime.GOMAXPROCS(0))

// eachLeafParallel calls fn for every leaf directory, from several
// goroutines at once and in no order. It splits the tree at the image
// level, the one with as many directories as entries.
func (s *Store) eachLeafParallel(ctx context.Context, sk *skipped, fn func(leaf string) error) error {
	var images []string
	err := eachLevel(ctx, s.dir, imageLevel+1, sk, func(dir string) error {
		images = append(images, dir)
		return nil
	})
	if err != nil {
		return err
	}
	var (
		wg       sync.WaitGroup
		next     atomic.Int64
		firstErr error
		once     sync.Once
	)
	for range min(walkers, len(images)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(images)); i = next.Add(1) - 1 {
				if err := descend(ctx, images[i], imageLevel+1, levels-imageLevel-1, sk, fn, false); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// eachLevel descends depth directory levels below the version directory
// dir. Directories that vanish meanwhile (another process evicting) are
// skipped; so is what cannot be listed below dir (a directory left by another user, a file
// where a directory should be), which goes to sk: one stray must not stop
// a pass over everything else. Only dir itself must be readable.
func eachLevel(ctx context.Context, dir string, depth int, sk *skipped, fn func(string) error) error {
	return descend(ctx, dir, deviceLevel, depth, sk, fn, true)
}

// descend calls fn for the directories depth levels below dir, whose
// entries are of the given level.
func descend(ctx context.Context, dir string, level, depth int, sk *skipped, fn func(string) error, top bool) error {
	if depth == 0 {
		return fn(dir)
	}
	list := readNames
	if top {
		list = readRootNames
	}
	names, err := list(dir)
	if err != nil {
		if top && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		sk.add(dir, err)
		return nil
	}
	for _, name := range names {
		if !isLevelName(level, name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := descend(ctx, dir+"/"+name, level+1, depth-1, sk, fn, false); err != nil {
			return err
		}
	}
	return nil
}

// direntBufs holds buffers for readNames.
var direntBufs = sync.Pool{New: func() any { return new([8192]byte) }}

// readNames returns the names in dir, a directory of the tree below the
// version directory, sorted. A symbolic link at dir is refused (ELOOP):
// the store makes none there, and a pass that followed one planted in the
// layout would remove what it finds in the directory it names, outside
// the cache (see checkTree). It reads the directory with bare system
// calls: os.Open would also register the descriptor with the network
// poller and a finalizer, a quarter more work per directory in a pass that
// lists hundreds of thousands.
func readNames(dir string) ([]string, error) {
	return readNamesFlags(dir, unix.O_NOFOLLOW)
}

// readRootNames is readNames for the cache's root and version directory,
// which a symbolic link may name: a cache moved to another disk is often
// linked into place.
func readRootNames(dir string) ([]string, error) {
	return readNamesFlags(dir, 0)
}

// readNamesFlags is readNames, opening dir with the extra flags.
func readNamesFlags(dir string, flags int) ([]string, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	buf := direntBufs.Get().(*[8192]byte)
	defer direntBufs.Put(buf)
	var names []string
	for {
		n, err := unix.ReadDirent(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	slices.Sort(names)
	return names, nil
}

// walkTotal sums the sizes of every committed entry, for a cache whose
// size file cannot be written.
func (s *Store) walkTotal(ctx context.Context) (int64, error) {
	var total atomic.Int64
	err := s.eachLeafParallel(ctx, nil, func(leaf string) error {
		c, err := listLeaf(leaf)
		if err == nil {
			total.Add(c.committed())
		}
		return nil
	})
	return total.Load(), err
}
