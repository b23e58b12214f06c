package deps

import (
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A record's check stats thousands of places, most of them a few dozen to
// a directory (a library's headers, the places a name was probed for
// along the search path), each by a full path of six to ten components.
// dirStats stats a place of a run of places in one directory relative to
// that directory, opened once (fstatat), so the kernel resolves the
// directory's path once per run instead of once per place.
//
// The answer is the stat's of the full path: the directory is opened by
// its path with the same resolution a stat of a place in it makes (every
// link followed), and the place's last component is then looked up in it
// as that stat would look it up (a link at the end followed too). Where
// the directory cannot be opened, the place does not exist either
// (ENOENT, ENOTDIR: stateMissing or stateNotDir, as the full path's stat
// says); any other
// failure leaves the place to a stat of its full path. TestDirStatsIsObserve
// pins the equivalence.

// dirRun is how many places in a row must share a directory before
// dirStats opens it: an open and a close cost about two stats, which a
// run of this length repays by its shorter path walks.
const dirRun = 4

// dirSlots is how many directories one dirStats keeps open: a record's
// places alternate between a few directories (one per search directory
// probed for each name).
const dirSlots = 4

// dirStats keeps a few directories open for one goroutine's stats. It is
// not safe for concurrent use; close releases its descriptors.
type dirStats struct {
	slots [dirSlots]dirSlot
	next  int // the slot reused next
	// budget bounds the directories open at once across a check's
	// goroutines (fdroom.go); nil for none.
	budget *descriptorBudget
}

// dirSlot is one directory of dirStats: open (fd >= 0) or known absent
// (fd < 0, missing: ENOENT or ENOTDIR, which a stat of a place in it
// answers too).
type dirSlot struct {
	path    string
	fd      int
	missing syscall.Errno
}

// observe stats seen[i].path as rawObserve does, at time now, relative to
// its directory where that directory is open or where the places after
// it share it (seen is in scan order).
func (d *dirStats) observe(seen []observation, i int, now time.Time) observation {
	path := seen[i].path
	dir, base, ok := splitPlace(path)
	if !ok {
		return rawObserve(path, now)
	}
	s := d.find(dir)
	if s == nil {
		if !runAhead(seen[i+1:], dir) {
			return rawObserve(path, now)
		}
		if s = d.open(dir); s == nil {
			return rawObserve(path, now)
		}
	}
	if s.missing != 0 {
		return observed(path, 0, identity{}, s.missing, now)
	}
	var st unix.Stat_t
	err := fstatat(s.fd, base, &st)
	for err == unix.EINTR { // as os.Stat retries
		err = fstatat(s.fd, base, &st)
	}
	return observed(path, uint32(st.Mode), statIdentity(&st), err, now)
}

// splitPlace splits path into its directory and last component, where a
// stat of the component in the opened directory is the stat of path: not
// for a path without a directory, one that ends in a slash, ".", or "..".
func splitPlace(path string) (dir, base string, ok bool) {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "", "", false
	}
	dir, base = path[:i], path[i+1:]
	if base == "" || base == "." || base == ".." || strings.HasSuffix(dir, "/") {
		return "", "", false
	}
	return dir, base, true
}

// runAhead reports whether at least dirRun-1 of the next few places lie
// in dir: a search path of several directories interleaves them, each
// name probed in each directory in turn.
func runAhead(next []observation, dir string) bool {
	count := 1
	for _, o := range next[:min(len(next), dirLookahead)] {
		if sameDir(o.path, dir) {
			if count++; count >= dirRun {
				return true
			}
		}
	}
	return false
}

// dirLookahead is how far runAhead looks: four search directories
// interleaved still open each.
const dirLookahead = dirSlots * dirRun

// sameDir reports whether place lies directly in dir.
func sameDir(place, dir string) bool {
	return len(place) > len(dir) && place[len(dir)] == '/' && strings.IndexByte(place[len(dir)+1:], '/') < 0
}

// find returns the slot of dir, or nil.
func (d *dirStats) find(dir string) *dirSlot {
	for i := range d.slots {
		if s := &d.slots[i]; s.path == dir && (s.fd >= 0 || s.missing != 0) {
			return s
		}
	}
	return nil
}

// open opens dir into a slot, or returns nil where the places in it must
// be stat'd by their full paths.
func (d *dirStats) open(dir string) *dirSlot {
	s := &d.slots[d.next]
	d.release(s) // its descriptor, if any, is the one taken now
	if d.budget != nil && !d.budget.take() {
		return nil
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	var missing syscall.Errno
	if err == unix.ENOENT || err == unix.ENOTDIR {
		missing = err.(syscall.Errno)
	} else if err != nil {
		d.give()
		return nil
	}
	d.next = (d.next + 1) % dirSlots
	s.path, s.fd, s.missing = dir, fd, missing
	if missing != 0 {
		s.fd = -1
		d.give()
	}
	return s
}

// release closes the slot's directory.
func (d *dirStats) release(s *dirSlot) {
	if s.path != "" && s.fd >= 0 {
		unix.Close(s.fd)
		d.give()
	}
	*s = dirSlot{fd: -1}
}

// give returns a descriptor to the budget.
func (d *dirStats) give() {
	if d.budget != nil {
		d.budget.give()
	}
}

// close releases every directory d holds.
func (d *dirStats) close() {
	for i := range d.slots {
		d.release(&d.slots[i])
	}
}

// observed is the observation of path by a stat that answered mode and
// id, or err.
func observed(path string, mode uint32, id identity, err error, now time.Time) observation {
	o := observation{path: path}
	switch {
	case err == syscall.ENOENT:
		o.state = stateMissing
	case err == syscall.ENOTDIR:
		o.state = stateNotDir
	case err != nil:
		o.state = stateError
	case mode&syscall.S_IFMT == syscall.S_IFREG:
		o.state, o.id = stateFile, id
	case mode&syscall.S_IFMT == syscall.S_IFDIR:
		o.state, o.id = stateDir, id
	default:
		o.state = stateOther
	}
	o.settled = o.id.settled(now)
	return o
}
