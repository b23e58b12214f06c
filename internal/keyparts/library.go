package keyparts

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
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
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseMaps(f)
}

// parseMaps reads the file mappings of a maps file (address, permissions,
// offset, device major:minor in hex, inode, path); anonymous mappings and
// pseudo-files ([heap], [vdso]) have inode 0 and are left out.
func parseMaps(r io.Reader) []Mapping {
	var out []Mapping
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 6)
		if len(fields) < 6 {
			continue
		}
		path := strings.TrimLeft(fields[5], " ")
		ino, err := strconv.ParseUint(fields[4], 10, 64)
		if err != nil || ino == 0 || !strings.HasPrefix(path, "/") || seen[path] {
			continue
		}
		seen[path] = true
		out = append(out, Mapping{Path: path, Dev: parseDev(fields[3]), Inode: ino})
	}
	return out
}

// parseDev turns a maps file's "major:minor" (hex) into the number stat
// reports as st_dev, glibc's encoding of the pair.
func parseDev(s string) uint64 {
	maj, min, _ := strings.Cut(s, ":")
	major, _ := strconv.ParseUint(maj, 16, 32)
	minor, _ := strconv.ParseUint(min, 16, 32)
	return (major&0xfff)<<8 | (major&^0xfff)<<32 | minor&0xff | (minor&^0xff)<<12
}
