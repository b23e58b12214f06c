package deps

import (
	"bytes"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// A large record's check opens up to statWorkers()*dirSlots directories
// at once (statat.go). Linux grows a process's descriptor table when an
// open finds it full, and in a process of several threads the growth waits
// for an RCU grace period (expand_fdtable's synchronize_rcu): 5-25 ms on
// the machines measured, against 0.2-1 ms for the whole check. A new
// process with a driver loaded (CUDA opens dozens of descriptors) sits
// near the table's first sizes, so its first key crossed one now and
// then and took 20 times as long (bench/RESULTS-cuda.md, round twenty).
//
// So a process that prepares for its first request (PrepareProcess) grows
// the table once, on its own goroutine, to hold at least a check's
// descriptors more than it does: a descriptor duplicated past the table's
// size, then closed. The table never shrinks; the room costs 8 bytes a
// descriptor.

// checkDescriptors is the most directories one check holds open.
func checkDescriptors() int { return statWorkers() * dirSlots }

// makeDescriptorRoom grows the descriptor table once per process.
var makeDescriptorRoom = sync.OnceFunc(func() { growDescriptorTable(checkDescriptors()) })

// growDescriptorTable grows the descriptor table by at least room
// descriptors past its size now, as /proc/self/status gives it. It gives
// up silently: without it a check is as exact, and only sometimes slower.
func growDescriptorTable(room int) {
	fd, err := unix.Open("/proc/self/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var buf [4096]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return
	}
	size, ok := descriptorTableSize(buf[:n])
	if !ok {
		return
	}
	// F_DUPFD gives the lowest free descriptor at or past its argument,
	// growing the table to hold it.
	if dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, size+room-1); err == nil {
		unix.Close(dup)
	}
}

// descriptorTableSize reads the FDSize line of a /proc/PID/status text:
// the number of descriptors the table holds without growing.
func descriptorTableSize(status []byte) (int, bool) {
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
