package disk

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Shards. The leaves are split into shardCount shards by their names, and
// each shard keeps, in the version directory's shards/ folder:
//
//	shards/<xx>        the shard's journal: which leaves it has and their bytes
//	shards/steps.lock  byte <xx> is held by the one process stepping through shard xx
//	shards/size        every shard's total, and the eviction cursor
//
// The journal lets eviction visit a shard's leaves without walking the
// tree, so a step costs what the shard holds (1/256 of the cache), not what
// the cache holds. It is a sequence of journal records, appended by every
// write and removal of an entry:
//
//	leaf    64 bytes: the four 16-byte component names of the leaf
//	delta   8 bytes little-endian, signed: how many bytes the leaf gained
//	check   4 bytes little-endian: CRC-32C of the 72 bytes before it
//
// A leaf's bytes are the sum of its records' deltas; a step replaces the
// journal with one record per leaf holding what it counted on disk. The
// journal only names candidates: a step lists each leaf before it trusts
// anything, and a record that fails its check (a torn append) is skipped.
//
// Each shard's total is also kept in the size file, so that a writer learns
// the cache's total by reading one small file. The size file holds
// shardCount+1 lines of exactly sizeLineLen bytes: the shards' totals, each
// 19 decimal digits and a newline, or a line of dashes for a total that is
// not known; then the cursor, the next shard eviction visits. A writer
// changes it under its flock, after appending to the journal and while it
// holds the journal's shared flock; a step holds the journal's exclusive
// flock while it sets its shard's total, so a total set by a step is exact.

// shardCount is how many shards the cache has. A step lists one shard's
// leaves: at 10^6 entries, 4,000, about 40 ms of system calls, which
// eviction may repeat as often as it needs without ever walking the
// tree. More shards would mean smaller steps but more files and a size
// file that takes longer to read on every write.
const shardCount = 256

// Names in the shards folder.
const (
	shardsName    = "shards"
	shardSizeName = "size"
	stepsLockName = "steps.lock"
)

// leafID names a leaf: its four component names, 16 bytes each.
type leafID [4 * digestHexLen / 2]byte

// idOf returns the leaf directory name of a path under dir, if it is one:
// every level well named, and the fan the image name's first digits.
func idOf(dir, leaf string) (leafID, bool) {
	var id leafID
	rel, ok := strings.CutPrefix(leaf, dir+"/")
	if !ok {
		return id, false
	}
	parts := strings.Split(rel, "/")
	if len(parts) != levels {
		return id, false
	}
	for level, p := range parts {
		if !isLevelName(level, p) {
			return id, false
		}
	}
	if parts[fanLevel] != parts[imageLevel][:fanHexLen] {
		return id, false
	}
	names := [...]string{parts[deviceLevel], parts[imageLevel], parts[specLevel], parts[optionsLevel]}
	for i, p := range names {
		if _, err := hex.Decode(id[i*digestHexLen/2:(i+1)*digestHexLen/2], []byte(p)); err != nil {
			return id, false
		}
	}
	return id, true
}

// shard returns the shard of a leaf. Mixing all four names spreads leaves
// evenly whether keys differ by source, by options or by both.
func (id leafID) shard() int {
	const w = digestHexLen / 2
	return int(id[0] ^ id[w] ^ id[2*w] ^ id[3*w])
}

// path returns the leaf's directory under the version directory dir.
func (id leafID) path(dir string) string {
	const w = digestHexLen / 2
	image := hex.EncodeToString(id[w : 2*w])
	return dir + "/" + hex.EncodeToString(id[:w]) + "/" + image[:fanHexLen] + "/" + image + "/" +
		hex.EncodeToString(id[2*w:3*w]) + "/" + hex.EncodeToString(id[3*w:])
}

// journalRecLen is the length of one journal record.
const journalRecLen = len(leafID{}) + 8 + 4

// journalRec is one record of a shard's journal.
type journalRec struct {
	leaf  leafID
	delta int64
}

func (r journalRec) marshal() []byte {
	b := make([]byte, 0, journalRecLen)
	b = append(b, r.leaf[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.delta))
	return binary.LittleEndian.AppendUint32(b, crc32c(b))
}

// parseJournal decodes a journal. A record that fails its check is skipped
// by sliding one byte at a time until records check again, so that one torn
// append does not hide every later record. It returns the records and,
// for each, the offset just past it.
func parseJournal(data []byte) (recs []journalRec, ends []int) {
	for off := 0; off+journalRecLen <= len(data); {
		b := data[off : off+journalRecLen]
		body := b[:journalRecLen-4]
		if crc32c(body) != binary.LittleEndian.Uint32(b[journalRecLen-4:]) {
			off++
			continue
		}
		var r journalRec
		copy(r.leaf[:], body)
		r.delta = int64(binary.LittleEndian.Uint64(body[len(r.leaf):]))
		recs = append(recs, r)
		off += journalRecLen
		ends = append(ends, off)
	}
	return recs, ends
}

// sizeLineLen is the length of one line of the size file: 19 digits hold
// any non-negative int64.
const sizeLineLen = 20

// unknownLine marks a total that is not known.
var unknownLine = strings.Repeat("-", sizeLineLen-1) + "\n"

// shardTotals is the content of the size file.
type shardTotals struct {
	bytes  [shardCount]int64
	known  [shardCount]bool
	cursor int
}

// parseTotals decodes the size file. A line that is not exactly what
// formatTotals writes leaves its total unknown; a file of the wrong length
// leaves every total unknown.
func parseTotals(b []byte) shardTotals {
	var t shardTotals
	if len(b) != (shardCount+1)*sizeLineLen {
		return t
	}
	for i := range shardCount + 1 {
		n, ok := parseSizeLine(b[i*sizeLineLen : (i+1)*sizeLineLen])
		if i == shardCount {
			if ok && n < shardCount {
				t.cursor = int(n)
			}
			break
		}
		t.bytes[i], t.known[i] = n, ok
	}
	return t
}

// parseSizeLine parses a line of 19 decimal digits and a newline.
func parseSizeLine(line []byte) (int64, bool) {
	if line[sizeLineLen-1] != '\n' {
		return 0, false
	}
	var n int64
	for _, c := range line[:sizeLineLen-1] {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false // overflows: not a total this package wrote
		}
		n = 10*n + d
	}
	return n, true
}

func (t *shardTotals) marshal() []byte {
	b := make([]byte, 0, (shardCount+1)*sizeLineLen)
	for i := range shardCount {
		if t.known[i] && t.bytes[i] >= 0 {
			b = fmt.Appendf(b, "%019d\n", t.bytes[i])
		} else {
			b = append(b, unknownLine...)
		}
	}
	return fmt.Appendf(b, "%019d\n", t.cursor)
}

// total returns the sum of the known totals and how many are unknown.
func (t shardTotals) total() (sum int64, unknown int) {
	for i := range shardCount {
		if t.known[i] {
			sum += t.bytes[i]
		} else {
			unknown++
		}
	}
	return sum, unknown
}

func (s *Store) shardsDir() string            { return s.dir + "/" + shardsName }
func (s *Store) journalPath(shard int) string { return fmt.Sprintf("%s/%02x", s.shardsDir(), shard) }

// updateTotals runs update on the size file's content under its lock and
// writes back what it leaves. It returns the content as written.
func (s *Store) updateTotals(ctx context.Context, update func(*shardTotals) bool) (shardTotals, error) {
	return s.updateTotalsWait(ctx, s.opts.LockTimeout, update)
}

// updateTotalsWait is updateTotals waiting at most wait for the lock.
func (s *Store) updateTotalsWait(ctx context.Context, wait time.Duration, update func(*shardTotals) bool) (shardTotals, error) {
	f, err := s.lockShardFile(ctx, s.shardsDir()+"/"+shardSizeName, wait, false)
	if err != nil {
		return shardTotals{}, err
	}
	defer f.Close()
	buf := make([]byte, (shardCount+1)*sizeLineLen+1)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return shardTotals{}, err
	}
	t := parseTotals(buf[:n])
	s.plausible(&t)
	if update(&t) {
		b := t.marshal()
		if _, err := f.WriteAt(b, 0); err != nil {
			return t, err
		}
		if n != len(b) {
			if err := f.Truncate(int64(len(b))); err != nil {
				return t, err
			}
		}
	}
	return t, nil
}

// plausible forgets totals larger than the file system holding the cache:
// damage, which the shard's next step recounts.
func (s *Store) plausible(t *shardTotals) {
	var st unix.Statfs_t
	if err := unix.Statfs(s.dir, &st); err != nil {
		return
	}
	limit := int64(min(st.Blocks*uint64(st.Bsize), math.MaxInt64))
	for x := range shardCount {
		if t.known[x] && t.bytes[x] > limit {
			t.known[x] = false
		}
	}
}

// readTotals reads the size file under its lock. The lock matters: lines
// are rewritten in place, and a read racing a write could see a line torn,
// which reads as unknown.
func (s *Store) readTotals(ctx context.Context) shardTotals {
	t, err := s.updateTotals(ctx, func(*shardTotals) bool { return false })
	if err != nil {
		return shardTotals{}
	}
	return t
}

// initTotals gives a new, empty cache a size file of zeros and a
// maintenance stamp, so that its first writes start no background work:
// otherwise a first write would start the maintenance pass to learn what
// an empty tree holds. A cache that holds entries but no size file (written
// by a version without shards) waits for that pass. Best effort: on a
// cache it cannot write, nothing changes.
func (s *Store) initTotals() {
	if _, err := os.Lstat(s.shardsDir() + "/" + shardSizeName); err == nil {
		return
	}
	fresh := false
	_, _ = s.updateTotals(context.Background(), func(t *shardTotals) bool {
		if _, unknown := t.total(); unknown < shardCount || !s.emptyTree() {
			return false
		}
		for x := range shardCount {
			t.known[x] = true
		}
		fresh = true
		return true
	})
	if _, err := os.Lstat(s.dir + "/" + trimName); fresh && errors.Is(err, os.ErrNotExist) {
		now := s.now()
		s.writeStamp(now)
		s.nextTrim.Store(now.Add(trimInterval).UnixNano())
	}
}

// emptyTree reports whether the version directory holds no entry's
// directory.
func (s *Store) emptyTree() bool {
	names, err := readRootNames(s.dir)
	if err != nil {
		return false
	}
	for _, n := range names {
		if isLevelName(deviceLevel, n) {
			return false
		}
	}
	return true
}

// account records that leaf gained delta bytes (negative when it lost
// some): a journal record, then the shard's total. The caller holds the
// leaf's lock, so that a step listing the leaf sees the change and its
// record on the same side of its listing. It returns the cache's total as
// the size file now has it, and how many shard totals are unknown. A
// positive delta that would take the total past ceiling (when that is set)
// is not counted, and the error wraps errOverCeiling. Otherwise best
// effort: a failure leaves the total off, and the shard's next step
// recounts it.
func (s *Store) account(ctx context.Context, leaf leafID, delta, ceiling int64) (total int64, unknown int, err error) {
	x := leaf.shard()
	j, err := s.lockShardFile(ctx, s.journalPath(x), s.opts.LockTimeout, true)
	if err != nil {
		return 0, 0, fmt.Errorf("journal: %w", err)
	}
	defer j.Close()
	if _, err := j.Write(journalRec{leaf, delta}.marshal()); err != nil {
		return 0, 0, fmt.Errorf("journal: %w", err)
	}
	over := false
	t, err := s.updateTotalsPatient(ctx, func(t *shardTotals) bool {
		if sum, _ := t.total(); ceiling > 0 && delta > 0 && sum+delta > ceiling {
			over = true
			return false
		}
		if !t.known[x] || t.bytes[x]+delta < 0 {
			t.known[x] = false // the shard's next step counts it
			return true
		}
		t.bytes[x] += delta
		return delta != 0
	})
	if over {
		// Take the record back, still under the journal's lock.
		_, err = j.Write(journalRec{leaf, -delta}.marshal())
		total, _ = t.total()
		s.lastTotal.Store(total)
		return total, 0, errors.Join(errOverCeiling, err)
	}
	if errors.Is(err, ErrLockTimeout) {
		return s.uncounted(ctx, j, leaf, delta, ceiling)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("size file: %w", err)
	}
	total, unknown = t.total()
	s.lastTotal.Store(total)
	return total, unknown, nil
}

// sizeLockWait is how long a write waits for the size file's lock without
// seeing the file change. Others hold the lock for the microseconds of a
// read and a rewrite of 5 KB, so a file unchanged that long while its lock
// stays busy means a holder that is stopped (SIGSTOP, a debugger, a machine
// swapping), and every Put would wait the whole lock timeout behind it.
// The write goes on uncounted instead: its journal record is there, and
// the shard's next step counts it (see uncounted). A file that changed
// means writers taking turns (eight processes under the race detector wait
// longer than this): the write waits on, up to the lock timeout, so that
// the ceiling holds.
const sizeLockWait = 100 * time.Millisecond

// updateTotalsPatient is updateTotals for a write: it waits for the lock
// while the size file keeps changing, and gives up with ErrLockTimeout
// after sizeLockWait without a change.
func (s *Store) updateTotalsPatient(ctx context.Context, update func(*shardTotals) bool) (shardTotals, error) {
	path := s.shardsDir() + "/" + shardSizeName
	deadline := time.Now().Add(s.opts.LockTimeout)
	for {
		before, _ := os.Stat(path)
		t, err := s.updateTotalsWait(ctx, s.sizeLockWait, update)
		if !errors.Is(err, ErrLockTimeout) || time.Now().After(deadline) {
			return t, err
		}
		after, serr := os.Stat(path)
		if before == nil || serr != nil || after.ModTime().Equal(before.ModTime()) {
			return t, err // a stopped holder
		}
	}
}

// uncounted settles a write whose journal record j holds but whose change
// to the total could not be made, the size file's lock being busy. A
// growth that would take the cache past ceiling, as this process last saw
// it, is taken back as over the ceiling. Otherwise the shard is marked for
// a recount, which the background work does once it has the lock: the
// total is then set from the journal, this record included.
func (s *Store) uncounted(ctx context.Context, j *os.File, leaf leafID, delta, ceiling int64) (int64, int, error) {
	last := s.lastTotal.Load()
	if ceiling > 0 && delta > 0 && last+delta > ceiling {
		_, err := j.Write(journalRec{leaf, -delta}.marshal())
		return last, 0, errors.Join(errOverCeiling, err)
	}
	s.owed.Store(leaf.shard(), struct{}{})
	s.kick()
	return 0, 0, fmt.Errorf("size file: %w; the shard's total is left to a recount", ErrLockTimeout)
}

// forgetOwed marks unknown the totals of the shards whose writes could not
// count themselves (see uncounted), so that the background work recounts
// them. Best effort: shards not marked stay owed for the next call.
func (s *Store) forgetOwed(ctx context.Context) {
	var xs []int
	s.owed.Range(func(k, _ any) bool { xs = append(xs, k.(int)); return true })
	if len(xs) == 0 {
		return
	}
	_, err := s.updateTotals(ctx, func(t *shardTotals) bool {
		for _, x := range xs {
			t.known[x] = false
		}
		return true
	})
	if err == nil {
		for _, x := range xs {
			s.owed.Delete(x)
		}
	}
}

// checkShards refuses a shards folder that is a symbolic link (or not a
// directory): the journals, the size file and a step's temporary files
// would be written wherever it points, over files of the same names.
// checkTree says the same of the leaves.
func (s *Store) checkShards() error {
	fi, err := os.Lstat(s.shardsDir())
	if err != nil || fi.IsDir() {
		return nil // missing: made by the caller, as a directory
	}
	return fmt.Errorf("%w: %s", errNotInTree, s.shardsDir())
}

// errOverCeiling says a write would take the cache past its ceiling.
var errOverCeiling = errors.New("disk: cache over its ceiling")

// lockShardFile opens a file of the shards folder, creating both if needed,
// and locks it: shared for a journal append, exclusive otherwise. Appends
// open the journal for appending.
func (s *Store) lockShardFile(ctx context.Context, path string, wait time.Duration, shared bool) (*os.File, error) {
	if err := s.checkShards(); err != nil {
		return nil, err
	}
	flags := os.O_RDWR | os.O_CREATE
	if shared {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	open := func(p string) (*os.File, error) { return s.modes.openFile(p, flags) }
	return s.lockPathMode(ctx, path, open, s.shardsDir(), wait, shared)
}
