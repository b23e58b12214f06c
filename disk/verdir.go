package disk

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// A lookup opens its slot's record relative to a handle on the version
// directory (openat(2) on an O_PATH descriptor) rather than by its full
// path: the kernel then walks the leaf's six names, not the root's too.
// A new process's first request opens two records (its dependency
// record's and its entry's), each with the kernel's caches cold, and on
// the H100 that open cost 5-15 us, most of a new process's file read
// (bench/RESULTS-cuda.md, hit7 and hit8).
//
// The handle names the directory that was there when it was opened. A
// Clear, in this process or another, renames the version directory aside
// and makes a new one: a lookup through the old handle then finds
// nothing, or an entry of the old tree, which is as sound as any (a hit is
// decided by the full key in the record and the binary's checksum, never
// by where it was found). So a lookup whose record is not there asks
// whether the handle still names the version directory (stale) and, where
// not, opens a new one and looks again by path.

// dirHandle is an open O_PATH descriptor of a version directory. Its
// descriptor is closed once nothing refers to the handle: a Store serves
// lookups after Close, and may be dropped without it.
type dirHandle struct {
	fd       int
	dev, ino uint64
}

// openDirHandle opens a handle on dir, or returns nil where it cannot
// (lookups then go by path).
func openDirHandle(dir string) *dirHandle {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil
	}
	h := &dirHandle{fd: fd, dev: uint64(st.Dev), ino: st.Ino}
	runtime.AddCleanup(h, func(fd int) { unix.Close(fd) }, fd)
	return h
}

// stale reports whether h no longer names dir: dir was removed, or
// replaced by another directory.
func (h *dirHandle) stale(dir string) bool {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return true
	}
	return uint64(st.Dev) != h.dev || st.Ino != h.ino
}

// renewDirHandle replaces the store's handle old, found stale, with one on
// the version directory now there (nil where there is none: lookups then
// go by path until a Clear of this process makes one).
func (s *Store) renewDirHandle(old *dirHandle) {
	s.vdir.CompareAndSwap(old, openDirHandle(s.dir))
}

// openSlot opens the slot's record at path, NUL-terminated in pz, relative
// to h where there is one (rel is where pz's part below the version
// directory starts), else by path.
func openSlot(h *dirHandle, pz []byte, rel int) (int, error) {
	if h == nil {
		return openReadZ(unix.AT_FDCWD, pz)
	}
	fd, err := openReadZ(h.fd, pz[rel:])
	runtime.KeepAlive(h) // its descriptor stays open until the call returns
	return fd, err
}
