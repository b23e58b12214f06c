package keyparts

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
	"syscall"
)

// Library is a library's identity for a key: its path, size and
// modification time, which change when it is replaced in place even where
// the version string its driver reports does not.
type Library struct {
	Path  string
	Size  int64
	MTime int64 // Unix nanoseconds
}

// StatLibrary returns the identity of the file at path. Where the file
// cannot be read, it returns the path alone, with the error.
func StatLibrary(path string) (Library, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Library{Path: path}, err
	}
	return Library{Path: path, Size: fi.Size(), MTime: fi.ModTime().UnixNano()}, nil
}

// MappedFiles returns the paths of the files mapped into this process,
// each once, in the order of /proc/self/maps; nil where that file does not
// exist. They are the libraries actually loaded, which the loader's
// search path alone cannot tell.
func MappedFiles() []string {
	var out []string
	for _, m := range ReadMaps() {
		out = append(out, m.Path)
	}
	return out
}

// Mapping is one file mapped into a process, as /proc/self/maps shows it:
// the path the kernel resolved (links followed), with " (deleted)" where
// the file was removed or replaced since it was mapped, and the device and
// inode numbers of the file actually mapped.
type Mapping struct {
	Path       string
	Dev, Inode uint64
}

// ReadMaps returns the files mapped into this process, each once, in the
// order of /proc/self/maps; nil where that file does not exist.
func ReadMaps() []Mapping {
	fd, err := openRaw("/proc/self/maps", 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	return parseMaps(fdStream(fd))
}

// mapsReadSize is the size of each read of /proc/self/maps: a large
// application's map is 1,000 lines and more (darktable's, 110-150 KB).
// Reads of 8 to 64 KB cost the same (1.2-1.4 ms for darktable's map on
// the 2-core machine); 256 KB ones 2.5 times as much, since the kernel
// then fills a buffer of that size for each.
const mapsReadSize = 32 << 10

// parseMaps reads the file mappings of a maps file (address, permissions,
// offset, device major:minor in hex, inode, path); anonymous mappings and
// pseudo-files ([heap], [vdso]) have inode 0 and are left out. It reads
// the file in mapsReadSize pieces and takes each line's fields in place,
// in the reader's buffer: a string is made only for a path kept, and no
// copy of the whole file is made or grown.
func parseMaps(r io.Reader) []Mapping {
	br := bufio.NewReaderSize(r, mapsReadSize)
	var out []Mapping
	seen := map[string]bool{}
	var long []byte // a line longer than the buffer, gathered
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		if m, ok := parseMapsLine(line); ok && !seen[string(m.path)] {
			path := string(m.path)
			seen[path] = true
			out = append(out, Mapping{Path: path, Dev: parseDev(m.dev), Inode: m.inode})
		}
		if err != nil {
			return out
		}
	}
}

// mapsLine is a maps line's fields that parseMaps keeps, in place.
type mapsLine struct {
	dev, path []byte
	inode     uint64
}

// parseMapsLine splits a line as strings.SplitN(line, " ", 6) would and
// keeps a mapping of a file: inode not 0, an absolute path.
func parseMapsLine(line []byte) (mapsLine, bool) {
	var fields [5][]byte
	for i := range fields {
		j := bytes.IndexByte(line, ' ')
		if j < 0 {
			return mapsLine{}, false
		}
		fields[i], line = line[:j], line[j+1:]
	}
	path := bytes.TrimLeft(line, " ")
	ino, err := strconv.ParseUint(string(fields[4]), 10, 64)
	if err != nil || ino == 0 || len(path) == 0 || path[0] != '/' {
		return mapsLine{}, false
	}
	return mapsLine{dev: fields[3], path: path, inode: ino}, true
}

// parseDev turns a maps file's "major:minor" (hex) into the number stat
// reports as st_dev, glibc's encoding of the pair.
func parseDev(s []byte) uint64 {
	maj, min, _ := bytes.Cut(s, []byte(":"))
	major, _ := strconv.ParseUint(string(maj), 16, 32)
	minor, _ := strconv.ParseUint(string(min), 16, 32)
	return (major&0xfff)<<8 | (major&^0xfff)<<32 | minor&0xff | (minor&^0xff)<<12
}
