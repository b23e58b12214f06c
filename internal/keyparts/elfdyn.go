package keyparts

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
)

// Bounds on what readDynamicFast reads: far above any real library's, so
// that a damaged file costs a bounded read before debug/elf says why.
const (
	maxProgramHeaders = 64 << 10 // bytes of program headers
	maxDynamicSection = 1 << 20  // bytes of the PT_DYNAMIC segment
	maxDynamicString  = 4 << 10  // bytes of one DT_NEEDED or DT_SONAME name
)

var errNotDynamicELF = errors.New("not an ELF file this reader can read")

// readDynamicFast is readDynamic's reader: the ELF header, the program
// headers, the PT_DYNAMIC segment and each name. It fails on anything it
// does not model (a count of program headers kept in section 0, a string
// table outside every loaded segment), leaving those files to debug/elf.
func readDynamicFast(path string) (dynInfo, error) {
	fd, err := openRaw(path, 0)
	if err != nil {
		return dynInfo{}, err
	}
	defer syscall.Close(fd)
	return parseDynamic(fdReader(fd))
}

// fdReader reads a file by its descriptor. readDynamicFast reads a few
// hundred bytes from each of some thirty libraries a process: an os.File
// would add, per file, the system calls of registering it with the
// runtime's poller, which a regular file then refuses.
type fdReader int

func (fd fdReader) ReadAt(b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		n, err := syscall.Pread(int(fd), b[done:], off+int64(done))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, io.EOF
		}
		done += n
	}
	return done, nil
}

// elfLayout is what parseDynamic needs of a file's ELF header.
type elfLayout struct {
	order            binary.ByteOrder
	is64             bool
	phoff            uint64
	phentsize, phnum int
}

// parseDynamic reads r, an ELF file, as readDynamicFast describes.
func parseDynamic(file io.ReaderAt) (dynInfo, error) {
	scratch := elfScratches.Get().(*elfScratch)
	defer elfScratches.Put(scratch)
	r := &prefixReader{r: file, buf: scratch.prefix[:]}
	lay, err := readELFHeader(r)
	if err != nil {
		return dynInfo{}, err
	}
	loads, dyn, err := readProgramHeaders(r, lay)
	if err != nil {
		return dynInfo{}, err
	}
	var d dynInfo
	if dyn.filesz == 0 {
		return d, nil // no dynamic segment: a static file needs nothing
	}
	if dyn.filesz > maxDynamicSection {
		return dynInfo{}, errNotDynamicELF
	}
	data := scratch.bytes(int(dyn.filesz))
	if _, err := r.ReadAt(data, int64(dyn.offset)); err != nil {
		return dynInfo{}, err
	}
	var needed []uint64
	var strtab, strsz, soname uint64
	hasSoname := false
	size := 8
	if lay.is64 {
		size = 16
	}
	for ; len(data) >= size; data = data[size:] {
		tag, val := dynEntry(lay, data)
		switch elf.DynTag(tag) {
		case elf.DT_NULL:
			data = nil
		case elf.DT_NEEDED:
			needed = append(needed, val)
		case elf.DT_SONAME:
			soname, hasSoname = val, true
		case elf.DT_STRTAB:
			strtab = val
		case elf.DT_STRSZ:
			strsz = val
		}
		if data == nil {
			break
		}
	}
	if len(needed) == 0 && !hasSoname {
		return d, nil
	}
	base, ok := fileOffset(loads, strtab)
	if !ok || strsz == 0 {
		return dynInfo{}, errNotDynamicELF
	}
	offs := needed
	if hasSoname {
		offs = append(offs, soname)
	}
	names, err := readNames(r, base, strsz, offs, scratch)
	if err != nil {
		return dynInfo{}, err
	}
	d.needed = names[:len(needed)]
	if hasSoname {
		d.soname = names[len(needed)]
	}
	return d, nil
}

// prefixReader reads the first prefixSize bytes of a file once and serves
// every read within them from memory: the ELF header and the program
// headers lie there in any library a linker made, one read for both.
type prefixReader struct {
	r      io.ReaderAt
	buf    []byte // where the prefix is read: prefixSize bytes
	prefix []byte // the file's first bytes, as read into buf; nil until the first read
}

const prefixSize = 4 << 10

// elfScratch is the memory one library's read uses and gives back: its
// prefix, and the dynamic segment or the names' window (one at a time).
// A new process reads some thirty libraries for its first key, and fresh
// memory costs a page fault for every page first touched: the buffers are
// reused (elfScratches) rather than allocated for each library.
type elfScratch struct {
	prefix [prefixSize]byte
	buf    []byte
}

var elfScratches = sync.Pool{New: func() any { return new(elfScratch) }}

// bytes returns n bytes of the scratch buffer, grown if need be; their
// content is undefined.
func (s *elfScratch) bytes(n int) []byte {
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	return s.buf[:n]
}

func (p *prefixReader) ReadAt(b []byte, off int64) (int, error) {
	if p.prefix == nil {
		n, _ := p.r.ReadAt(p.buf, 0)
		p.prefix = p.buf[:n]
	}
	if off >= 0 && off+int64(len(b)) <= int64(len(p.prefix)) {
		return copy(b, p.prefix[off:]), nil
	}
	return p.r.ReadAt(b, off)
}

// maxNamesWindow bounds the one read readNames makes for every name of a
// library; names spread wider are read one by one.
const maxNamesWindow = 64 << 10

// readNames reads the dynamic strings at offs of the table at base, of
// strsz bytes: as readName reads each, but in one read where they lie
// within maxNamesWindow of each other.
func readNames(r io.ReaderAt, base, strsz uint64, offs []uint64, scratch *elfScratch) ([]string, error) {
	if len(offs) == 0 {
		return nil, nil
	}
	lo, hi := offs[0], uint64(0)
	for _, off := range offs {
		if off >= strsz {
			return nil, fmt.Errorf("a dynamic string at %d, past its table of %d bytes: %w", off, strsz, errNotDynamicELF)
		}
		lo, hi = min(lo, off), max(hi, off+min(strsz-off, maxDynamicString))
	}
	out := make([]string, 0, len(offs))
	if hi-lo > maxNamesWindow {
		for _, off := range offs {
			s, err := readName(r, base, strsz, off)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	window := scratch.bytes(int(hi - lo))
	got, err := r.ReadAt(window, int64(base+lo))
	window = window[:got]
	for _, off := range offs {
		start := off - lo
		end := min(start+min(strsz-off, maxDynamicString), uint64(len(window)))
		if start > end {
			start = end
		}
		i := bytes.IndexByte(window[start:end], 0)
		if i < 0 {
			if err == nil {
				err = errNotDynamicELF // no NUL within the bound or the table
			}
			return nil, fmt.Errorf("reading a dynamic string: %w", err)
		}
		out = append(out, string(window[start:start+uint64(i)]))
	}
	return out, nil
}

func readELFHeader(r io.ReaderAt) (elfLayout, error) {
	var h [64]byte
	n, _ := r.ReadAt(h[:], 0) // 52 bytes for a 32-bit file, 64 for a 64-bit one
	if n < 52 {
		return elfLayout{}, errNotDynamicELF
	}
	if !bytes.Equal(h[:4], []byte(elf.ELFMAG)) {
		return elfLayout{}, errNotDynamicELF
	}
	var lay elfLayout
	switch elf.Data(h[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		lay.order = binary.LittleEndian
	case elf.ELFDATA2MSB:
		lay.order = binary.BigEndian
	default:
		return elfLayout{}, errNotDynamicELF
	}
	switch elf.Class(h[elf.EI_CLASS]) {
	case elf.ELFCLASS64:
		if n < 64 {
			return elfLayout{}, errNotDynamicELF
		}
		lay.is64 = true
		lay.phoff = lay.order.Uint64(h[32:])
		lay.phentsize, lay.phnum = int(lay.order.Uint16(h[54:])), int(lay.order.Uint16(h[56:]))
		if lay.phentsize < 56 {
			return elfLayout{}, errNotDynamicELF
		}
	case elf.ELFCLASS32:
		lay.phoff = uint64(lay.order.Uint32(h[28:]))
		lay.phentsize, lay.phnum = int(lay.order.Uint16(h[42:])), int(lay.order.Uint16(h[44:]))
		if lay.phentsize < 32 {
			return elfLayout{}, errNotDynamicELF
		}
	default:
		return elfLayout{}, errNotDynamicELF
	}
	if lay.phnum == 0xffff || lay.phentsize*lay.phnum > maxProgramHeaders { // PN_XNUM: the count is elsewhere
		return elfLayout{}, errNotDynamicELF
	}
	return lay, nil
}

// segment is a program header's place in the file and in memory.
type segment struct {
	offset, vaddr, filesz uint64
}

// readProgramHeaders returns the PT_LOAD segments and the PT_DYNAMIC one
// (zero where there is none).
func readProgramHeaders(r io.ReaderAt, lay elfLayout) (loads []segment, dyn segment, err error) {
	ph := make([]byte, lay.phentsize*lay.phnum)
	if _, err := r.ReadAt(ph, int64(lay.phoff)); err != nil {
		return nil, segment{}, errNotDynamicELF
	}
	for i := 0; i < lay.phnum; i++ {
		typ, s := programHeader(lay, ph[i*lay.phentsize:])
		switch elf.ProgType(typ) {
		case elf.PT_LOAD:
			loads = append(loads, s)
		case elf.PT_DYNAMIC:
			dyn = s
		}
	}
	return loads, dyn, nil
}

func programHeader(lay elfLayout, b []byte) (uint32, segment) {
	o := lay.order
	if lay.is64 {
		return o.Uint32(b), segment{offset: o.Uint64(b[8:]), vaddr: o.Uint64(b[16:]), filesz: o.Uint64(b[32:])}
	}
	return o.Uint32(b), segment{offset: uint64(o.Uint32(b[4:])), vaddr: uint64(o.Uint32(b[8:])), filesz: uint64(o.Uint32(b[16:]))}
}

func dynEntry(lay elfLayout, b []byte) (int64, uint64) {
	if lay.is64 {
		return int64(lay.order.Uint64(b)), lay.order.Uint64(b[8:])
	}
	return int64(int32(lay.order.Uint32(b))), uint64(lay.order.Uint32(b[4:]))
}

// fileOffset returns where the address vaddr lies in the file: inside the
// file part of a loaded segment.
func fileOffset(loads []segment, vaddr uint64) (uint64, bool) {
	for _, s := range loads {
		if vaddr >= s.vaddr && vaddr-s.vaddr < s.filesz {
			return s.offset + (vaddr - s.vaddr), true
		}
	}
	return 0, false
}

// readName reads the NUL-terminated string at off of the string table at
// base, strsz bytes long.
func readName(r io.ReaderAt, base, strsz, off uint64) (string, error) {
	if off >= strsz {
		return "", fmt.Errorf("a dynamic string at %d, past its table of %d bytes: %w", off, strsz, errNotDynamicELF)
	}
	n := min(strsz-off, maxDynamicString)
	buf := make([]byte, n)
	got, err := r.ReadAt(buf, int64(base+off))
	if i := bytes.IndexByte(buf[:got], 0); i >= 0 {
		return string(buf[:i]), nil
	}
	if err == nil {
		err = errNotDynamicELF // no NUL within the bound or the table
	}
	return "", fmt.Errorf("reading a dynamic string: %w", err)
}
