package keyparts

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"path/filepath"
	"slices"

	"github.com/kcache/kcache"
)

// FileID is one file's identity in a compiler's: where it really is (links
// resolved) and what changes when it is replaced or edited in place. The
// change time joins the modification time because an edit that restores
// the mtime cannot restore the ctime; the inode changes when a file is
// replaced by a rename, whatever times the new file carries.
type FileID struct {
	Path  string // real path; a mapped file deleted since it was loaded ends in " (deleted)"
	Size  int64
	MTime int64 // Unix nanoseconds
	CTime int64 // Unix nanoseconds; zero where the system does not tell
	Inode uint64
}

// StatFile returns the identity of the file at path, links resolved.
func StatFile(path string) (FileID, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return FileID{Path: path}, err
	}
	return statReal(real)
}

// Files is the set of files a compiler is made of: its libraries and the
// data files it reads.
type Files []FileID

// Digest returns the digest of the identities, in path order: the same
// set stats to the same digest whatever order it was found in.
//
// It holds each file's real path, size and mtime, not its ctime and
// inode: those differ between the machines of a fleet that installed the
// same driver package, whose entries the remote tier must share. A driver
// file replaced or edited in place gets a new mtime (a package manager
// sets the package's); only an edit that restores both size and mtime by
// hand goes unseen, which the stat identity of the headers (ctime
// included) does not allow: that is the price of sharing across
// machines. Hashing the driver's files (hundreds of megabytes) once per
// machine would close it.
func (fs Files) Digest() kcache.Digest {
	sorted := slices.Clone(fs)
	slices.SortFunc(sorted, func(a, b FileID) int { return cmp.Compare(a.Path, b.Path) })
	sorted = slices.CompactFunc(sorted, func(a, b FileID) bool { return a.Path == b.Path })
	h := sha256.New()
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(sorted)))
	for _, f := range sorted {
		b = binary.AppendUvarint(b, uint64(len(f.Path)))
		b = append(b, f.Path...)
		b = binary.AppendVarint(b, f.Size)
		b = binary.AppendVarint(b, f.MTime)
	}
	h.Write(b)
	var d kcache.Digest
	h.Sum(d[:0])
	return d
}
