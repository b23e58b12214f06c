package deps

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A large record's check opens directories to stat places relative to
// them (statat.go), up to dirSlots for each of its goroutines. Linux grows
// a process's descriptor table when an open finds no free slot, and in a
// process of several threads the growth waits for an RCU grace period
// (expand_fdtable's synchronize_rcu): 3-21 ms on the development VM,
// against 0.2-1 ms for the whole check. A CUDA process sits just under the
// table's first size (64: the driver's descriptors), and a check of a CUB
// kernel's record that opened its 64 directories took 13-17 ms where it
// took 0.6-0.9 ms without crossing it (bench/RESULTS-cuda.md, round
// twenty).
//
// So a check opens directories only within the room the table has: its
// size (FDSize in /proc/self/status) less the descriptors open
// (/proc/self/fd), less a margin for the application's own threads,
// learnt once per check when its first directory would be opened. Past
// that room, or where /proc cannot say, places are stat'd by their full
// paths: the same answers, a longer walk. Where the room is short of a
// check's, the table is grown on a goroutine of its own, whose wait for
// the grace period keeps no request waiting (an open waits for a growth
// only where it needs one itself), so that the next checks find room.

// descriptorMargin is the room a check leaves free for other threads.
const descriptorMargin = 8

// descriptorBudget is how many directories one check may hold open at
// once. Its zero value learns the room on the first take.
type descriptorBudget struct {
	once sync.Once
	left atomic.Int64
}

// take reserves a descriptor, reporting false where none is left.
func (b *descriptorBudget) take() bool {
	b.once.Do(func() {
		room, open := descriptorRoom()
		want := checkDescriptors()
		if room-descriptorMargin < want && open > 0 {
			growDescriptorTable(open + want + descriptorMargin)
		}
		b.left.Store(int64(min(room-descriptorMargin, want)))
	})
	if b.left.Add(-1) < 0 {
		b.left.Add(1)
		return false
	}
	return true
}

// give returns a descriptor take reserved.
func (b *descriptorBudget) give() { b.left.Add(1) }

// checkDescriptors is the most directories one check opens.
func checkDescriptors() int { return statWorkers() * dirSlots }

// descriptorRoom is countDescriptorRoom, counted at most once a
// roomFresh for all checks: counting lists /proc/self/fd, about 1 us a
// descriptor (5 ms in a process of 5,000 on the development VM), and a
// process's descriptors change far more slowly than a server's checks
// come. A table of ampleTable slots or more is taken to have room without
// counting: a check's directories are a few percent of it.
func descriptorRoom() (room, open int) {
	if size := int(lastTableSize.Load()); size >= ampleTable {
		return size, 0
	}
	if r := lastRoom.Load(); r != nil && time.Since(r.at) < roomFresh {
		return r.room, r.open
	}
	room, open = countDescriptorRoom()
	lastRoom.Store(&roomCount{room: room, open: open, at: time.Now()})
	return room, open
}

// Bounds of descriptorRoom's counting.
const (
	roomFresh  = time.Second
	ampleTable = 4096
)

// roomCount is a count of countDescriptorRoom and when it was made.
type roomCount struct {
	room, open int
	at         time.Time
}

// lastRoom is the last count; nil for none, or where the table grew since.
var lastRoom atomic.Pointer[roomCount]

// countDescriptorRoom returns how many descriptors the process can open
// now before its descriptor table must grow, and how many are open; 0 and
// 0 where that is not known. The table never shrinks, so a size read
// before is a lower bound of the size now: the status is read again only
// where the room that bound gives is short of a check's.
func countDescriptorRoom() (room, open int) {
	open, ok := openDescriptors()
	if !ok {
		return 0, 0
	}
	size := int(lastTableSize.Load())
	if size-open < checkDescriptors()+descriptorMargin {
		n, ok := descriptorTableSize()
		if !ok {
			return 0, 0
		}
		lastTableSize.Store(int64(n))
		size = n
	}
	return max(size-open, 0), open
}

// lastTableSize is the descriptor table's size as last read.
var lastTableSize atomic.Int64

// growing is set while growDescriptorTable's goroutine runs.
var growing atomic.Bool

// growDescriptorTable grows the descriptor table, on a goroutine of its
// own, to hold at least slots descriptors: F_DUPFD gives the lowest free
// descriptor at or past its argument, growing the table to hold it, and
// the duplicate is closed at once. One growth runs at a time; failures
// are silent (the checks stay exact, only slower).
func growDescriptorTable(slots int) {
	if !growing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer growing.Store(false)
		fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		if dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, slots-1); err == nil {
			unix.Close(dup)
			lastRoom.Store(nil) // the next check counts the room grown
		}
	}()
}

// descriptorTableSize returns the size of the descriptor table, as the
// FDSize line of /proc/self/status gives it.
func descriptorTableSize() (int, bool) {
	fd, err := unix.Open("/proc/self/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	var buf [4096]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return 0, false
	}
	return statusTableSize(buf[:n])
}

// statusTableSize reads the FDSize line of a /proc/PID/status text.
func statusTableSize(status []byte) (int, bool) {
	_, rest, ok := bytes.Cut(status, []byte("\nFDSize:"))
	if !ok {
		return 0, false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	size, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil || size <= 0 {
		return 0, false
	}
	return size, true
}

// openDescriptors counts the process's open descriptors, not counting
// the one that lists them (closed after).
func openDescriptors() (int, bool) {
	fd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	var buf [8192]byte
	var names []string
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err != nil {
			return 0, false
		}
		if n == 0 {
			return len(names) - 1, true
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
