package keyparts

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func writeLib(t *testing.T, path, content string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func TestStatLibrary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "libx.so.1")
	mtime := time.Unix(1700000000, 123456789)
	writeLib(t, path, "12345", mtime)
	got, err := StatLibrary(path)
	if err != nil || got != (Library{Path: path, Size: 5, MTime: mtime.UnixNano()}) {
		t.Errorf("StatLibrary = %+v, %v", got, err)
	}
	missing := filepath.Join(dir, "gone.so")
	if got, err := StatLibrary(missing); err == nil || got != (Library{Path: missing}) {
		t.Errorf("StatLibrary(missing) = %+v, %v; want the path alone and an error", got, err)
	}
}

// TestMappedFiles checks the process's own map: this test binary and the
// files it maps appear once each.
func TestMappedFiles(t *testing.T) {
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("no /proc/self/maps on this system")
	}
	files := MappedFiles()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, exe) {
		t.Errorf("MappedFiles() = %q lacks the executable %s", files, exe)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f] {
			t.Errorf("%s listed twice", f)
		}
		seen[f] = true
	}
}

// TestDynSectionsByFileIdentity: a library's dynamic section is read once
// while its file is unchanged, and read again when the file is replaced
// (a new inode) or rewritten in place (new times).
func TestDynSectionsByFileIdentity(t *testing.T) {
	const a, b = "/usr/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
	bytesOf := func(p string) []byte {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Skipf("no %s here: %v", p, err)
		}
		return data
	}
	za, zb := bytesOf(a), bytesOf(b)
	path := filepath.Join(t.TempDir(), "libdriver.so.1")
	read := func(what string, wantReads int64) []string {
		t.Helper()
		before := dynReads.Load()
		d, _, err := dynSections.read(path)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := dynReads.Load() - before; got != wantReads {
			t.Errorf("%s: %d reads of the file, want %d", what, got, wantReads)
		}
		return d.needed
	}
	if err := os.WriteFile(path, za, 0o644); err != nil {
		t.Fatal(err)
	}
	first := read("first", 1)
	if !slices.Equal(read("unchanged", 0), first) {
		t.Error("the kept section differs from the first read")
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, zb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	replaced := read("replaced", 1)
	if slices.Equal(replaced, first) {
		t.Fatalf("%s and %s need the same libraries (%v): pick others", a, b, first)
	}
	if err := os.WriteFile(path, za, 0o644); err != nil { // in place: same inode
		t.Fatal(err)
	}
	if got := read("rewritten in place", 1); !slices.Equal(got, first) {
		t.Errorf("rewritten in place: needs %v, want %v", got, first)
	}
}

// elfLib returns a minimal ELF shared object whose dynamic section names
// soname (none where empty) and needs needed, as the dynamic loader and
// readDynamic read it: an ELF header, a PT_LOAD of the whole file and a
// PT_DYNAMIC, the string table, then the dynamic array.
func elfLib(soname string, needed ...string) []byte {
	const ehdr, phdr = 64, 56
	strtab := []byte{0}
	str := func(s string) uint64 {
		off := uint64(len(strtab))
		strtab = append(append(strtab, s...), 0)
		return off
	}
	type dyn struct{ tag, val uint64 }
	var dyns []dyn
	for _, n := range needed {
		dyns = append(dyns, dyn{uint64(elf.DT_NEEDED), str(n)})
	}
	if soname != "" {
		dyns = append(dyns, dyn{uint64(elf.DT_SONAME), str(soname)})
	}
	strOff := uint64(ehdr + 2*phdr)
	dynOff := (strOff + uint64(len(strtab)) + 7) &^ 7
	dyns = append(dyns, dyn{uint64(elf.DT_STRTAB), strOff}, dyn{uint64(elf.DT_STRSZ), uint64(len(strtab))}, dyn{uint64(elf.DT_NULL), 0})
	size := dynOff + uint64(16*len(dyns))
	le := binary.LittleEndian
	b := make([]byte, size)
	copy(b, []byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	le.PutUint16(b[16:], uint16(elf.ET_DYN))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(b[32:], ehdr) // e_phoff
	le.PutUint16(b[52:], ehdr) // e_ehsize
	le.PutUint16(b[54:], phdr) // e_phentsize
	le.PutUint16(b[56:], 2)    // e_phnum
	le.PutUint16(b[58:], 64)   // e_shentsize
	prog := func(at int, typ elf.ProgType, off, n, align uint64) {
		p := b[at:]
		le.PutUint32(p[0:], uint32(typ))
		le.PutUint32(p[4:], uint32(elf.PF_R))
		le.PutUint64(p[8:], off)  // p_offset
		le.PutUint64(p[16:], off) // p_vaddr
		le.PutUint64(p[24:], off) // p_paddr
		le.PutUint64(p[32:], n)   // p_filesz
		le.PutUint64(p[40:], n)   // p_memsz
		le.PutUint64(p[48:], align)
	}
	prog(ehdr, elf.PT_LOAD, 0, size, 0x1000)
	prog(ehdr+phdr, elf.PT_DYNAMIC, dynOff, size-dynOff, 8)
	copy(b[strOff:], strtab)
	for i, d := range dyns {
		le.PutUint64(b[dynOff+uint64(16*i):], d.tag)
		le.PutUint64(b[dynOff+uint64(16*i)+8:], d.val)
	}
	return b
}

// TestElfLib checks the test's own ELF files against the closure's
// reader. (They have no section headers, which debug/elf would need.)
func TestElfLib(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libx.so.1")
	writeLib(t, path, string(elfLib("libx.so.1", "liby.so.2", "libz.so")), time.Now())
	got, err := readDynamic(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"liby.so.2", "libz.so"}; !slices.Equal(got.needed, want) || got.soname != "libx.so.1" {
		t.Errorf("readDynamic = %+v; want soname libx.so.1 needing %q", got, want)
	}
}
