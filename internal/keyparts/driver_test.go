package keyparts

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/kcache/kcache"
)

// requireReal skips a test that needs files of a real installation where
// they are missing, except under KCACHE_REQUIRE_REAL=1 (CI), where it
// fails.
func requireReal(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
				t.Fatalf("KCACHE_REQUIRE_REAL=1 but %v", err)
			}
			t.Skip(err)
		}
	}
}

func TestParseMaps(t *testing.T) {
	const maps = `55bd78601000-55bd78603000 r--p 00000000 fe:00 247026                     /usr/bin/cat
55bd78603000-55bd78608000 r-xp 00002000 fe:00 247026                     /usr/bin/cat
7f0000000000-7f0000001000 rw-p 00000000 00:00 0 
7f0000001000-7f0000002000 rw-p 00000000 00:00 0                          [heap]
7f0000002000-7f0000003000 r--p 00000000 103:02 42                        /opt/my libs/libx.so
7f0000003000-7f0000004000 r--p 00000000 fe:00 77                         /usr/lib/liby.so.1 (deleted)
`
	got := parseMaps(strings.NewReader(maps))
	want := []Mapping{
		{Path: "/usr/bin/cat", Dev: 0xfe00, Inode: 247026},
		{Path: "/opt/my libs/libx.so", Dev: 259<<8 | 2, Inode: 42},
		{Path: "/usr/lib/liby.so.1 (deleted)", Dev: 0xfe00, Inode: 77},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseMaps = %+v, want %+v", got, want)
	}
}

// TestReadMapsMatchesStat checks that the device and inode numbers of
// the process's own map are those stat gives for the same file: ICD
// libraries are matched by them.
func TestReadMapsMatchesStat(t *testing.T) {
	requireReal(t, "/proc/self/maps")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dev, ino, err := devIno(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ReadMaps() {
		if m.Path == exe {
			if m.Dev != dev || m.Inode != ino {
				t.Errorf("maps gives %s device %#x inode %d, stat %#x %d", exe, m.Dev, m.Inode, dev, ino)
			}
			return
		}
	}
	t.Errorf("the executable %s is not in the map", exe)
}

// mapped returns the mappings the kernel would show for paths: their
// real paths and numbers.
func mapped(t *testing.T, paths ...string) []Mapping {
	t.Helper()
	var out []Mapping
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		dev, ino, err := devIno(real)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Mapping{Path: real, Dev: dev, Inode: ino})
	}
	return out
}

// TestICDMappings checks how vendor files' library names are matched
// against the map: a bare soname that is a link (NVIDIA's
// libnvidia-opencl.so.1) is found through the search path and matched
// with the file it links to; an absolute path likewise; a mapped file of
// the same name elsewhere is not the driver.
func TestICDMappings(t *testing.T) {
	root := t.TempDir()
	libs, other := filepath.Join(root, "lib"), filepath.Join(root, "other")
	for _, d := range []string{libs, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(libs, "libnvidia-opencl.so.535.1"), filepath.Join(libs, "libdrvb.so.7")
	decoy := filepath.Join(other, "libnvidia-opencl.so.535.1")
	for _, f := range []string{a, b, decoy, filepath.Join(libs, "libapp.so")} {
		writeLib(t, f, "x", time.Now())
	}
	for link, target := range map[string]string{"libnvidia-opencl.so.1": a, "libdrvb.so": b} {
		if err := os.Symlink(filepath.Base(target), filepath.Join(libs, link)); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"libnvidia-opencl.so.1", filepath.Join(libs, "libdrvb.so"), "libmissing.so"}
	maps := mapped(t, decoy, filepath.Join(libs, "libapp.so"), b, a)
	got := icdMappings(names, maps, []string{other + "/nothing", libs})
	if want := []Mapping{maps[2], maps[3]}; !slices.Equal(got, want) {
		t.Errorf("icdMappings = %+v, want %+v", got, want)
	}
	// The kernel may show another path for the same file (a bind mount):
	// the numbers still match.
	alias := maps[3]
	alias.Path = "/elsewhere/libnvidia-opencl.so.535.1"
	if got := icdMappings(names[:1], []Mapping{alias}, []string{libs}); len(got) != 1 {
		t.Errorf("a mapped file under another path with the same numbers: %+v", got)
	}
}

// fakeDriver lays out a driver installed under a prefix: the library and
// the link a vendor file names, a plugin directory, and a data directory
// with headers and kernel library bitcode.
func fakeDriver(t *testing.T) (prefix string, maps []Mapping) {
	prefix = t.TempDir()
	for _, d := range []string{"lib/x86_64-linux-gnu/drv", "share/drv/include"} {
		if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lib := filepath.Join(prefix, "lib/x86_64-linux-gnu/libdrv.so.2.1")
	files := map[string]string{
		lib: string(elfLib("libdrv.so.2", "libc.so.6")),
		filepath.Join(prefix, "lib/x86_64-linux-gnu/drv/libdrv-devices-a.so"): string(elfLib("", "libdrv.so.2")),
		filepath.Join(prefix, "lib/x86_64-linux-gnu/drv/libdrv-devices-b.so"): string(elfLib("", "libdrv.so.2", "libb.so")),
		filepath.Join(prefix, "lib/x86_64-linux-gnu/libapp.so"):               string(elfLib("libapp.so", "libdrv.so.2")),
		filepath.Join(prefix, "share/drv/include/_kernel.h"):                  "#define K 1",
		filepath.Join(prefix, "share/drv/kernel-x86_64.bc"):                   "bitcode",
	}
	for p, c := range files {
		writeLib(t, p, c, time.Unix(1700000000, 0))
	}
	if err := os.Symlink("libdrv.so.2.1", filepath.Join(prefix, "lib/x86_64-linux-gnu/libdrv.so.2")); err != nil {
		t.Fatal(err)
	}
	maps = mapped(t, filepath.Join(prefix, "lib/x86_64-linux-gnu/libapp.so"), lib,
		filepath.Join(prefix, "lib/x86_64-linux-gnu/drv/libdrv-devices-a.so"))
	return prefix, maps
}

func filePaths(fs Files) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	slices.Sort(out)
	return out
}

// TestOpenCLDriverFiles checks what a driver is made of: its library, the
// plugins in its own directory (loaded or not), and its data directory,
// found relative to the library; and not the application's libraries.
func TestOpenCLDriverFiles(t *testing.T) {
	prefix, maps := fakeDriver(t)
	search := []string{filepath.Join(prefix, "lib/x86_64-linux-gnu")}
	d := openCLDriver([]string{"libdrv.so.2"}, maps, search)
	if got := filePaths(d.ICD); !slices.Equal(got, []string{maps[1].Path}) {
		t.Errorf("ICD = %q, want the driver library", got)
	}
	var want []string
	for _, p := range []string{"lib/x86_64-linux-gnu/libdrv.so.2.1", "lib/x86_64-linux-gnu/drv/libdrv-devices-a.so",
		"lib/x86_64-linux-gnu/drv/libdrv-devices-b.so", "share/drv/include/_kernel.h", "share/drv/kernel-x86_64.bc"} {
		want = append(want, filepath.Join(prefix, p))
	}
	slices.Sort(want)
	if got := filePaths(d.Files); !slices.Equal(got, want) {
		t.Errorf("Files = %q\nwant %q", got, want)
	}
	if d := openCLDriver([]string{"libnone.so"}, maps, search); len(d.ICD) != 0 || len(d.Files) != 0 {
		t.Errorf("no driver loaded: %+v", d)
	}
}

// TestDriverDigestChanges checks that changing a file of the driver in
// place changes the digest: an edit, a new mtime alone, a replacement by
// rename, a plugin rebuilt.
func TestDriverDigestChanges(t *testing.T) {
	prefix, maps := fakeDriver(t)
	search := []string{filepath.Join(prefix, "lib/x86_64-linux-gnu")}
	digest := func() string {
		return openCLDriver([]string{"libdrv.so.2"}, maps, search).Files.Digest().String()
	}
	base := digest()
	if again := digest(); again != base {
		t.Fatalf("digest unstable: %s, %s", base, again)
	}
	header := filepath.Join(prefix, "share/drv/include/_kernel.h")
	bitcode := filepath.Join(prefix, "share/drv/kernel-x86_64.bc")
	mtime := time.Unix(1700000000, 0)
	for _, change := range []struct {
		name string
		do   func()
	}{
		// A same-length edit with the mtime restored is not seen: the
		// digest leaves ctime and inode out so that the machines of a
		// fleet share keys (see Files.Digest).
		{"edit", func() { writeLib(t, header, "#define K 22", mtime) }},
		{"mtime", func() { os.Chtimes(bitcode, mtime, mtime.Add(time.Second)) }},
		{"replaced by rename", func() {
			tmp := bitcode + ".new"
			writeLib(t, tmp, "bitcode", mtime.Add(2*time.Second))
			if err := os.Rename(tmp, bitcode); err != nil {
				t.Fatal(err)
			}
		}},
		{"plugin not yet loaded", func() {
			writeLib(t, filepath.Join(prefix, "lib/x86_64-linux-gnu/drv/libdrv-devices-b.so"), "plugin B, rebuilt", mtime)
		}},
	} {
		time.Sleep(10 * time.Millisecond) // past the file system's timestamp granularity
		change.do()
		if now := digest(); now == base {
			t.Errorf("%s: digest unchanged", change.name)
		} else {
			base = now
		}
	}
}

// TestClosure checks the DT_NEEDED closure on PoCL's real libraries: the
// libraries libpocl needs, matched by file name or by DT_SONAME
// (libstdc++.so.6 is libstdc++.so.6.0.30 on disk), and not the process's
// other libraries (the ICD loader, the executable).
func TestClosure(t *testing.T) {
	const dir = "/usr/lib/x86_64-linux-gnu/"
	requireReal(t, dir+"libpocl.so.2")
	needed := []string{"libLLVM-15.so.1", "libclang-cpp.so.15", "libstdc++.so.6", "libc.so.6", "libgcc_s.so.1"}
	var paths []string
	for _, n := range append([]string{"libpocl.so.2", "libOpenCL.so.1"}, needed...) {
		paths = append(paths, dir+n)
	}
	maps := mapped(t, append(paths, "/usr/bin/cat")...)
	libs, ids, complete := closure(maps[:1], maps)
	if !complete {
		t.Fatal("PoCL's closure incomplete")
	}
	for _, m := range libs {
		// The stat the closure's read made is the one mappedID makes.
		if got, want := mappedIDFrom(m, ids), mappedID(m); got != want || ids[m.Path].path == "" {
			t.Errorf("%s: identity from the closure's read %+v, from a stat %+v", m.Path, got, want)
		}
	}
	got := filePaths(mappedFiles(libs))
	var want []string
	for _, m := range slices.Delete(slices.Clone(maps), 1, 2) {
		if m.Path != "/usr/bin/cat" {
			want = append(want, m.Path)
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("closure = %q\nwant %q", got, want)
	}
}

func mappedFiles(ms []Mapping) Files {
	var out Files
	for _, m := range ms {
		out = append(out, FileID{Path: m.Path})
	}
	return out
}

// TestDataFilesOfACopy checks, on a copy of PoCL's own files installed
// under another prefix, that the data directory is found relative to the
// library and that touching its kernel library or a header changes the
// digest.
func TestDataFilesOfACopy(t *testing.T) {
	const lib, share = "/usr/lib/x86_64-linux-gnu/libpocl.so.2.10.0", "/usr/share/pocl"
	requireReal(t, lib, share+"/include/_kernel.h")
	bitcode, _ := filepath.Glob(share + "/kernel-*.bc")
	if len(bitcode) == 0 {
		t.Fatalf("no kernel library in %s", share)
	}
	prefix := t.TempDir()
	copyFile(t, lib, filepath.Join(prefix, "lib/libpocl.so.2.10.0"))
	copyFile(t, share+"/include/_kernel.h", filepath.Join(prefix, "share/pocl/include/_kernel.h"))
	copyFile(t, bitcode[0], filepath.Join(prefix, "share/pocl", filepath.Base(bitcode[0])))
	maps := mapped(t, filepath.Join(prefix, "lib/libpocl.so.2.10.0"))
	digest := func() string {
		d := openCLDriver([]string{filepath.Join(prefix, "lib/libpocl.so.2.10.0")}, maps, nil)
		if len(d.Files) != 3 {
			t.Fatalf("Files = %q, want the library, the header and the bitcode", filePaths(d.Files))
		}
		return d.Files.Digest().String()
	}
	base := digest()
	for _, f := range []string{filepath.Join(prefix, "share/pocl", filepath.Base(bitcode[0])), filepath.Join(prefix, "share/pocl/include/_kernel.h")} {
		time.Sleep(10 * time.Millisecond)
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, fi.ModTime(), fi.ModTime().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if now := digest(); now == base {
			t.Errorf("touching %s left the digest as it was", f)
		} else {
			base = now
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDynStrings checks the reader of dynamic entries against debug/elf's
// on real libraries, 64-bit and (where installed) 32-bit.
func TestDynStrings(t *testing.T) {
	const dir = "/usr/lib/x86_64-linux-gnu/"
	requireReal(t, dir+"libpocl.so.2", dir+"libstdc++.so.6")
	for _, lib := range []string{dir + "libpocl.so.2", dir + "libstdc++.so.6", dir + "libLLVM-15.so.1", "/usr/lib32/libc.so.6"} {
		f, err := elf.Open(lib)
		if err != nil {
			continue
		}
		for _, tag := range []elf.DynTag{elf.DT_NEEDED, elf.DT_SONAME} {
			want, err1 := f.DynString(tag)
			got, err2 := dynStrings(f, tag)
			if err1 != nil || err2 != nil || !slices.Equal(got, want) {
				t.Errorf("%s %v: %q, %v; debug/elf reads %q, %v", lib, tag, got, err2, want, err1)
			}
		}
		f.Close()
	}
}

// TestReadDynamicAsDebugELF checks the program-header reader against
// debug/elf's section-header reading on every library of the system's
// library directories (and 32-bit ones where installed): the same needed
// names, in order, and the same DT_SONAME.
func TestReadDynamicAsDebugELF(t *testing.T) {
	const dir = "/usr/lib/x86_64-linux-gnu/"
	requireReal(t, dir+"libpocl.so.2")
	libs, _ := filepath.Glob(dir + "*.so*")
	more, _ := filepath.Glob("/usr/lib32/*.so*")
	libs = append(libs, more...)
	checked := 0
	for _, lib := range libs {
		f, err := elf.Open(lib)
		if err != nil {
			continue // a linker script, not an ELF file
		}
		wantNeeded, err1 := f.DynString(elf.DT_NEEDED)
		sonames, err2 := f.DynString(elf.DT_SONAME)
		f.Close()
		if err1 != nil || err2 != nil {
			continue
		}
		want := dynInfo{needed: wantNeeded}
		if len(sonames) > 0 {
			want.soname = sonames[0]
		}
		got, err := readDynamicFast(lib)
		if err != nil || !slices.Equal(got.needed, want.needed) || got.soname != want.soname {
			t.Errorf("%s: %q %q, %v; debug/elf reads %q %q", lib, got.needed, got.soname, err, want.needed, want.soname)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("only %d libraries checked", checked)
	}
	t.Logf("%d libraries", checked)
}

// FuzzParseDynamic feeds the program-header reader damaged ELF files: it
// must never panic nor read past its bounds, and what it reads of a file
// debug/elf also reads must agree with debug/elf.
func FuzzParseDynamic(f *testing.F) {
	for _, lib := range []string{"/usr/lib/x86_64-linux-gnu/libpocl-devices-basic.so", "/usr/lib/x86_64-linux-gnu/pocl/libpocl-devices-basic.so", "/usr/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib32/libz.so.1"} {
		if b, err := os.ReadFile(lib); err == nil && len(b) < 1<<20 {
			f.Add(b)
		}
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseDynamic(bytes.NewReader(b))
		if err != nil {
			return
		}
		ef, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		want, err := ef.DynString(elf.DT_NEEDED)
		if err != nil || ef.SectionByType(elf.SHT_DYNAMIC) == nil {
			return // debug/elf reads sections, which a damaged file may lack
		}
		dyn := ef.SectionByType(elf.SHT_DYNAMIC)
		if p := dynamicProg(ef); p == nil || p.Off != dyn.Offset || p.Filesz != dyn.Size {
			return // the segment and the section disagree: two readings of a damaged file
		}
		if len(got.needed) > 0 && !slices.Equal(got.needed, want) {
			t.Errorf("needed %q; debug/elf reads %q", got.needed, want)
		}
	})
}

func dynamicProg(f *elf.File) *elf.Prog {
	for _, p := range f.Progs {
		if p.Type == elf.PT_DYNAMIC {
			return p
		}
	}
	return nil
}

// TestLibraryFiles checks a single library's files: itself as mapped,
// what it needs, and its companions on disk; and the file alone where it
// is not mapped.
func TestLibraryFiles(t *testing.T) {
	const dir = "/usr/lib/x86_64-linux-gnu/"
	requireReal(t, dir+"libpocl.so.2")
	maps := mapped(t, dir+"libpocl.so.2", dir+"libc.so.6", dir+"libOpenCL.so.1")
	got := filePaths(libraryFiles(dir+"libpocl.so.2", maps, []string{"pocl/libpocl-devices-*.so"}))
	want := []string{maps[0].Path, maps[1].Path, dir + "pocl/libpocl-devices-basic.so", dir + "pocl/libpocl-devices-pthread.so"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("libraryFiles = %q\nwant %q", got, want)
	}
	if got := filePaths(libraryFiles(dir+"libpocl.so.2", nil, nil)); !slices.Equal(got, []string{maps[0].Path}) {
		t.Errorf("libraryFiles of an unmapped library = %q, want %q", got, maps[0].Path)
	}
}

// TestCompanionFiles: one listing per directory finds what a glob per
// pattern finds: several patterns of one directory (a file matching two
// counted once), a pattern of a subdirectory, one over directories, and
// a directory that does not exist.
func TestCompanionFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"libnvidia-nvvm.so.4", "libnvidia-nvvm.so.580", "libnvidia-ptxjitcompiler.so.1", "libother.so", "sub/a.so", "sub/b.txt", "sub2/c.so"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeLib(t, filepath.Join(dir, f), f, time.Now())
	}
	patterns := []string{"libnvidia-nvvm.so*", "libnvidia-ptxjitcompiler.so*", "libnvidia-*.so.1", "libnone.so*", "sub/*.so", "sub*/c.so", "missing/*.so"}
	var want []string
	for _, p := range patterns {
		matches, _ := filepath.Glob(filepath.Join(dir, p))
		want = append(want, matches...)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if got := filePaths(companionFiles(dir, patterns)); !slices.Equal(got, want) {
		t.Errorf("companionFiles = %q\nwant %q", got, want)
	}
}

// TestICDNames checks where driver library names are read: every place
// either ICD loader reads them, so that no loaded driver goes unkeyed.
func TestICDNames(t *testing.T) {
	vendors, other := t.TempDir(), t.TempDir()
	writeLib(t, filepath.Join(vendors, "a.icd"), "libdrva.so.2\n", time.Now())
	writeLib(t, filepath.Join(vendors, "b.icd"), "/opt/b/libdrvb.so", time.Now())
	writeLib(t, filepath.Join(vendors, "c.txt"), "libnot.so", time.Now())
	writeLib(t, filepath.Join(other, "d.icd"), "libdrvd.so", time.Now())
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"vendor directory", map[string]string{"OCL_ICD_VENDORS": vendors}, []string{"libdrva.so.2", "/opt/b/libdrvb.so"}},
		{"one vendor file", map[string]string{"OCL_ICD_VENDORS": filepath.Join(other, "d.icd")}, []string{"libdrvd.so"}},
		{"a library", map[string]string{"OCL_ICD_VENDORS": "libx.so"}, []string{"libx.so"}},
		{"file names and the Khronos path", map[string]string{"OCL_ICD_FILENAMES": "/a/liba.so:libb.so", "OPENCL_VENDOR_PATH": other},
			[]string{"/a/liba.so", "libb.so", "libdrvd.so"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := icdNames(func(k string) string { return tc.env[k] })
			defaults := vendorDirNames("/etc/OpenCL/vendors")
			if !slices.Equal(got, append(slices.Clone(tc.want), defaults...)) {
				t.Errorf("icdNames = %q, want %q then the defaults %q", got, tc.want, defaults)
			}
		})
	}
}

// TestVendorFileNamingALink runs the whole search on a fake installation:
// a vendor file names a soname that is a link (as NVIDIA's names
// libnvidia-opencl.so.1), found through LD_LIBRARY_PATH, and the driver's
// files are keyed.
func TestVendorFileNamingALink(t *testing.T) {
	prefix, maps := fakeDriver(t)
	vendors := t.TempDir()
	writeLib(t, filepath.Join(vendors, "drv.icd"), "libdrv.so.2\n", time.Now())
	names := icdNames(func(k string) string { return map[string]string{"OCL_ICD_VENDORS": vendors}[k] })
	d := openCLDriver(names, maps, librarySearchPath(filepath.Join(prefix, "lib/x86_64-linux-gnu")))
	if len(d.ICD) != 1 || d.ICD[0].Path != maps[1].Path || len(d.Files) != 5 {
		t.Errorf("driver = %+v, want %s and its 5 files", d, maps[1].Path)
	}
}

// TestLibrarySearchPath checks the loader's directories: LD_LIBRARY_PATH
// first, then ld.so.conf's, then the defaults.
func TestLibrarySearchPath(t *testing.T) {
	got := librarySearchPath("/x:/y")
	if len(got) < 6 || got[0] != "/x" || got[1] != "/y" || !slices.Equal(got[len(got)-4:], []string{"/lib", "/usr/lib", "/lib64", "/usr/lib64"}) {
		t.Errorf("librarySearchPath = %q", got)
	}
	dir := t.TempDir()
	writeLib(t, filepath.Join(dir, "ld.so.conf"), "include conf.d/*.conf\n/top # a comment\n", time.Now())
	if err := os.Mkdir(filepath.Join(dir, "conf.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeLib(t, filepath.Join(dir, "conf.d", "a.conf"), "# multiarch\n/usr/lib/a\n\n", time.Now())
	if got := ldSoConf(filepath.Join(dir, "ld.so.conf"), 0); !slices.Equal(got, []string{"/usr/lib/a", "/top"}) {
		t.Errorf("ldSoConf = %q", got)
	}
}

// BenchmarkCompanionFiles finds the CUDA driver's three companion
// patterns in a large library directory: "one-listing" as companionFiles
// does, "glob-per-pattern" as libraryFiles did before (a filepath.Glob
// per pattern, each listing and sorting the whole directory).
func BenchmarkCompanionFiles(b *testing.B) {
	const dir = "/usr/lib/x86_64-linux-gnu"
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("no %s: %v", dir, err)
	}
	patterns := []string{"libnvidia-ptxjitcompiler.so*", "libnvidia-nvvm.so*", "libnvidia-gpucomp.so*"}
	b.Run("one-listing", func(b *testing.B) {
		for b.Loop() {
			companionFiles(dir, patterns)
		}
	})
	b.Run("glob-per-pattern", func(b *testing.B) {
		for b.Loop() {
			for _, p := range patterns {
				matches, _ := filepath.Glob(filepath.Join(dir, p))
				for _, m := range matches {
					StatFile(m)
				}
			}
		}
	})
}

// TestPrefetchTakenOnlyWhenInputsHold checks that OpenCLDriver takes a
// prefetched driver only when what it was found from (vendor names,
// search path, memory map) is what the process has now: a prefetch made
// before a library was mapped or a vendor file added must be found again.
func TestPrefetchTakenOnlyWhenInputsHold(t *testing.T) {
	fake := Driver{ICD: Files{{Path: "/prefetched/libOpenCLdriver.so"}}}
	prefetched := func(in driverInputs) {
		ResetOpenCLDriver()
		p := &driverPrefetch{done: make(chan struct{}), in: in, d: fake}
		close(p.done)
		loadedDriver.prefetch = p
	}
	t.Cleanup(ResetOpenCLDriver)

	prefetched(readDriverInputs())
	if got := OpenCLDriver(); len(got.ICD) != 1 || got.ICD[0].Path != fake.ICD[0].Path {
		t.Fatalf("inputs unchanged: got %v, want the prefetched driver", got.ICD)
	}
	changes := map[string]func(*driverInputs){
		"a library mapped since": func(in *driverInputs) { in.mapped = in.mapped[:len(in.mapped)-1] },
		"a vendor name added":    func(in *driverInputs) { in.names = in.names[1:] },
		"the search path":        func(in *driverInputs) { in.search = append(in.search, "/elsewhere") },
	}
	for what, change := range changes {
		in := readDriverInputs()
		if len(in.mapped) == 0 || len(in.names) == 0 {
			t.Skip("no memory map or vendor names to change here")
		}
		change(&in)
		prefetched(in)
		if got := OpenCLDriver(); len(got.ICD) > 0 && got.ICD[0].Path == fake.ICD[0].Path {
			t.Errorf("%s: the prefetched driver was taken", what)
		}
	}
}

// TestPrefetchChain checks that a prefetch after another takes the earlier
// answer where the inputs did not change since, and searches again where
// they did (a driver that mapped its plugins between the two).
func TestPrefetchChain(t *testing.T) {
	fake := Driver{ICD: Files{{Path: "/prefetched/libOpenCLdriver.so"}}}
	t.Cleanup(ResetOpenCLDriver)
	for _, stale := range []bool{false, true} {
		ResetOpenCLDriver()
		in := readDriverInputs()
		if stale {
			in.search = append(in.search, "/elsewhere")
		}
		first := &driverPrefetch{done: make(chan struct{}), in: in, d: fake}
		close(first.done)
		loadedDriver.prefetch = first
		PrefetchOpenCLDriver()
		got := OpenCLDriver()
		taken := len(got.ICD) > 0 && got.ICD[0].Path == fake.ICD[0].Path
		if taken == stale {
			t.Errorf("earlier prefetch's inputs stale %v: its answer taken %v", stale, taken)
		}
	}
	ResetOpenCLDriver()
	for range maxPrefetches + 3 {
		PrefetchOpenCLDriver()
	}
	if loadedDriver.prefetches != maxPrefetches {
		t.Errorf("%d prefetches started, want at most %d", loadedDriver.prefetches, maxPrefetches)
	}
	OpenCLDriver()
}

// TestPrefetchCheckedByLoaderCount checks the check made with the dynamic
// loader's counts: counts unchanged take the prefetched driver without
// the memory map (here made to differ, which the map's check would
// refuse); a count moved, or a vendor name changed, refuses it.
func TestPrefetchCheckedByLoaderCount(t *testing.T) {
	fake := Driver{ICD: Files{{Path: "/prefetched/libOpenCLdriver.so"}}}
	adds, subs := uint64(40), uint64(2)
	SetLoaderCounter(func() (uint64, uint64, bool) { return adds, subs, true })
	t.Cleanup(func() { SetLoaderCounter(nil); ResetOpenCLDriver() })
	prefetched := func(change func(*driverInputs)) bool {
		ResetOpenCLDriver()
		in := readDriverInputs()
		in.mapped = nil // the map's check would refuse this prefetch
		change(&in)
		p := &driverPrefetch{done: make(chan struct{}), in: in, d: fake}
		close(p.done)
		loadedDriver.prefetch = p
		got := OpenCLDriver()
		return len(got.ICD) > 0 && got.ICD[0].Path == fake.ICD[0].Path
	}
	if !prefetched(func(*driverInputs) {}) {
		t.Error("counts unchanged: the prefetched driver was not taken")
	}
	if prefetched(func(in *driverInputs) { in.loads.adds-- }) {
		t.Error("a library loaded since: the prefetched driver was taken")
	}
	if prefetched(func(in *driverInputs) { in.loads.subs-- }) {
		t.Error("a library unloaded since: the prefetched driver was taken")
	}
	if prefetched(func(in *driverInputs) { in.names = append(in.names, "libother.so") }) {
		t.Error("a vendor name added: the prefetched driver was taken")
	}
	SetLoaderCounter(func() (uint64, uint64, bool) { return 0, 0, false })
	if prefetched(func(*driverInputs) {}) {
		t.Error("counts unknown: the map's check was not made")
	}
}

// TestPrefetchChainByLoaderCount checks a chained prefetch under the
// dynamic loader's counts: counts and search unchanged since the earlier
// prefetch take its answer without the memory map (here made to differ,
// which the map's check would refuse); a count moved searches again.
func TestPrefetchChainByLoaderCount(t *testing.T) {
	fake := Driver{ICD: Files{{Path: "/prefetched/libOpenCLdriver.so"}}}
	adds := uint64(40)
	SetLoaderCounter(func() (uint64, uint64, bool) { return adds, 2, true })
	t.Cleanup(func() { SetLoaderCounter(nil); ResetOpenCLDriver() })
	chained := func(loadedSince bool) bool {
		ResetOpenCLDriver()
		in := readDriverInputs()
		in.mapped = nil // the map's check would refuse the earlier answer
		first := &driverPrefetch{done: make(chan struct{}), in: in, d: fake}
		close(first.done)
		loadedDriver.prefetch = first
		if loadedSince {
			adds++
		}
		PrefetchOpenCLDriver()
		got := OpenCLDriver()
		return len(got.ICD) > 0 && got.ICD[0].Path == fake.ICD[0].Path
	}
	if !chained(false) {
		t.Error("nothing loaded since: the earlier prefetch's answer was not taken")
	}
	if chained(true) {
		t.Error("a library loaded since: the earlier prefetch's answer was taken")
	}
}

// parseMapsByFields is parseMaps as strings.SplitN and strconv read a
// line, the reference the in-place parser must agree with.
func parseMapsByFields(text string) []Mapping {
	var out []Mapping
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		fields := strings.SplitN(line, " ", 6)
		if len(fields) < 6 {
			continue
		}
		path := strings.TrimLeft(fields[5], " ")
		ino, err := strconv.ParseUint(fields[4], 10, 64)
		if err != nil || ino == 0 || !strings.HasPrefix(path, "/") || seen[path] {
			continue
		}
		seen[path] = true
		maj, min, _ := strings.Cut(fields[3], ":")
		major, err1 := strconv.ParseUint(maj, 16, 32)
		minor, err2 := strconv.ParseUint(min, 16, 32)
		dev := uint64(0)
		if err1 == nil && err2 == nil {
			dev = (major&0xfff)<<8 | (major&^0xfff)<<32 | minor&0xff | (minor&^0xff)<<12
		}
		out = append(out, Mapping{Path: path, Dev: dev, Inode: ino})
	}
	return out
}

// sameMappings compares parseMaps's answer with the reference's, devices
// only where the reference could read them (it stops at 32 bits).
func sameMappings(got, want []Mapping) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Path != want[i].Path || got[i].Inode != want[i].Inode || (want[i].Dev != 0 && got[i].Dev != want[i].Dev) {
			return false
		}
	}
	return true
}

// TestParseMapsAsByFields: the process's own map, read whole, parses as
// the reference parses it.
func TestParseMapsAsByFields(t *testing.T) {
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	want := parseMapsByFields(string(data))
	for _, r := range []io.Reader{bytes.NewReader(data), iotest.HalfReader(bytes.NewReader(data))} {
		if got := parseMaps(r); len(want) == 0 || !sameMappings(got, want) {
			t.Errorf("parseMaps = %v,\nwant %v", got, want)
		}
	}
}

// FuzzParseMaps checks the in-place parser against the reference on any
// bytes: the kernel writes the file, but a parser must not trust it.
func FuzzParseMaps(f *testing.F) {
	if data, err := os.ReadFile("/proc/self/maps"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("7f0000002000-7f0000003000 r--p 00000000 103:02 42     /opt/my libs/libx.so\n"))
	f.Add([]byte("a b c fff:fffff 18446744073709551615 /x\na b c 1:2 99999999999999999999 /y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want := parseMaps(bytes.NewReader(data)), parseMapsByFields(string(data))
		if !sameMappings(got, want) {
			t.Errorf("parseMaps(%q) = %v, want %v", data, got, want)
		}
	})
}

// BenchmarkParseMaps parses a map the size of a large application's
// (1,600 lines, 400 libraries).
func BenchmarkParseMaps(b *testing.B) {
	var sb strings.Builder
	for i := range 400 {
		for j := range 4 {
			fmt.Fprintf(&sb, "7f%010x-7f%010x r-xp %08x fe:00 %d                     /usr/lib/x86_64-linux-gnu/lib%d-plugin.so.%d\n", i*4+j, i*4+j+1, j*4096, 100000+i, i, j%2)
		}
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		parseMaps(bytes.NewReader(data))
	}
}

// FuzzCandidatesByName checks the closure's index against mayProvide
// asked of every mapped file: the same files, in mapped's order.
func FuzzCandidatesByName(f *testing.F) {
	f.Add("libstdc++.so.6.0.30", "libstdc++.so.6", "libc.so.6", "libstdc++.so.6")
	f.Add("libx.so", "libx.so.1", "x", "libx.so.1.2")
	f.Add("a..so", "a.so.so", "a.s.so", "a..so.1")
	f.Add("libz.so.1", "libz.so.1.2.13", "libzstd.so.1", "libz")
	f.Fuzz(func(t *testing.T, a, b, c, name string) {
		var mapped []Mapping
		for i, base := range []string{a, b, c, a} {
			if strings.Contains(base, "/") || base == "" {
				return
			}
			mapped = append(mapped, Mapping{Path: "/lib" + strconv.Itoa(i) + "/" + base})
		}
		var want []Mapping
		for _, m := range mapped {
			if mayProvide(m.Path, name) {
				want = append(want, m)
			}
		}
		if got := candidatesByName(mapped)(name); !slices.Equal(got, want) {
			t.Errorf("candidatesByName(%q) = %v, want %v", name, got, want)
		}
	})
}

// TestUnreadableLibraryWidens checks the closure where a library's needs
// cannot be read (a file damaged, or deleted since it was mapped, as an
// upgrade under a running application leaves it): every mapped file
// enters the driver's files, so that a change to one the closure could
// not rule out changes the key. With the library intact, the
// application's own library stays out (the test's control).
func TestUnreadableLibraryWidens(t *testing.T) {
	prefix, maps := fakeDriver(t)
	search := []string{filepath.Join(prefix, "lib/x86_64-linux-gnu")}
	app := maps[0].Path
	digest := func(maps []Mapping) (kcache.Digest, []string) {
		d := openCLDriver([]string{"libdrv.so.2"}, maps, search)
		return d.Files.Digest(), filePaths(d.Files)
	}
	touchApp := func() {
		time.Sleep(10 * time.Millisecond)
		now := time.Now()
		if err := os.Chtimes(app, now, now); err != nil {
			t.Fatal(err)
		}
	}
	before, files := digest(maps)
	if slices.Contains(files, app) || slices.Contains(files, widenedFiles.Path) {
		t.Fatalf("intact driver: files %q hold the application's library or the mark", files)
	}
	touchApp()
	if after, _ := digest(maps); after != before {
		t.Fatal("intact driver: the application's library changed the driver's digest")
	}

	deleted := slices.Clone(maps)
	deleted[2].Path += " (deleted)" // the plugin, replaced on disk since it was mapped
	plugin := filepath.Join(prefix, "lib/x86_64-linux-gnu/drv/libdrv-devices-a.so")
	for name, maps := range map[string][]Mapping{"deleted": deleted, "damaged": maps} {
		if name == "damaged" {
			writeLib(t, plugin, "not an ELF file", time.Unix(1700000000, 0))
		}
		before, files := digest(maps)
		if !slices.Contains(files, app) || !slices.Contains(files, widenedFiles.Path) {
			t.Fatalf("%s plugin: files %q lack the application's library or the mark", name, files)
		}
		touchApp()
		if after, _ := digest(maps); after == before {
			t.Errorf("%s plugin: a change to a mapped library the closure could not rule out left the digest", name)
		}
	}
	// LibraryFiles (CUDA's libraries) widens the same way.
	lib := filepath.Join(prefix, "lib/x86_64-linux-gnu/libdrv.so.2.1")
	writeLib(t, lib, "damaged driver", time.Unix(1700000000, 0))
	if got := filePaths(libraryFiles(lib, maps, nil)); !slices.Contains(got, app) || !slices.Contains(got, widenedFiles.Path) {
		t.Errorf("libraryFiles of an unreadable library = %q, want every mapped file, marked", got)
	}
}

// TestUnfoundDriverKeysEveryMappedFile checks what stands for a driver
// that is not found among the mapped files: each of them, marked, so
// that a change to any changes the key.
func TestUnfoundDriverKeysEveryMappedFile(t *testing.T) {
	_, maps := fakeDriver(t)
	files := unfoundDriverFiles(maps)
	got := filePaths(files)
	if !slices.Contains(got, unfoundDriver.Path) {
		t.Errorf("files %q lack the mark", got)
	}
	for _, m := range maps {
		if !slices.Contains(got, m.Path) {
			t.Errorf("files %q lack the mapped %s", got, m.Path)
		}
	}
	before := files.Digest()
	time.Sleep(10 * time.Millisecond)
	now := time.Now()
	if err := os.Chtimes(maps[0].Path, now, now); err != nil {
		t.Fatal(err)
	}
	if unfoundDriverFiles(maps).Digest() == before {
		t.Error("a changed mapped file left the digest")
	}
}

// failSearchAt makes the driver search panic at the steps fail picks,
// for the test.
func failSearchAt(t *testing.T, fail func(step string) bool) {
	t.Helper()
	searchFaults.Store(func(step string) {
		if fail(step) {
			panic("injected at " + step)
		}
	})
	t.Cleanup(func() { searchFaults.Store(func(string) {}) })
}

// TestSearchPanics checks that a panic anywhere in the driver search,
// on the caller's goroutine or one of its own, ends neither the process
// nor exactness: a library reader's panic widens the closure as an
// unreadable library does, and any other gives a driver of a mark that no
// other search makes.
func TestSearchPanics(t *testing.T) {
	prefix, maps := fakeDriver(t)
	in := driverInputs{names: []string{"libdrv.so.2"}, mapped: maps, search: []string{filepath.Join(prefix, "lib/x86_64-linux-gnu")}}
	intact := searchOpenCLDriver(in)
	if slices.Contains(filePaths(intact.Files), maps[0].Path) {
		t.Fatal("intact search holds the application's library")
	}
	plugin := maps[2].Path
	failSearchAt(t, func(step string) bool { return step == "dynamic "+plugin })
	if got := filePaths(searchOpenCLDriver(in).Files); !slices.Contains(got, maps[0].Path) || !slices.Contains(got, widenedFiles.Path) {
		t.Errorf("a reader's panic: files %q, want every mapped file, marked", got)
	}
	for _, step := range []string{"data", "start"} {
		failSearchAt(t, func(s string) bool { return s == step })
		a, b := searchOpenCLDriver(in), searchOpenCLDriver(in)
		if len(a.ICD) == 0 || a.Files.Digest() == intact.Files.Digest() || a.Files.Digest() == b.Files.Digest() {
			t.Errorf("a panic at %s: drivers %+v and %+v, want two marks of their own", step, a, b)
		}
	}
}

// TestMappedIDOfAReplacedFile checks a file replaced between the map's
// read and its stat: the map still names its path, with the old inode,
// and the identity is the new file's under a marked path, so that it
// never keys as the new file does in a process that maps it.
func TestMappedIDOfAReplacedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libx.so.1")
	writeLib(t, path, "old", time.Unix(1700000000, 0))
	maps := mapped(t, path)
	if got := mappedID(maps[0]); got.Path != path || got.Size != 3 {
		t.Fatalf("the mapped file itself: %+v", got)
	}
	tmp := path + ".new"
	writeLib(t, tmp, "newer", time.Unix(1700000100, 0))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	got := mappedID(maps[0])
	if got.Path != path+" (not the mapped file)" || got.Size != 5 {
		t.Errorf("replaced since the map was read: %+v, want the new file's identity, marked", got)
	}
	if now := mapped(t, path); mappedID(now[0]).Path != path {
		t.Errorf("a map read after the replacement: %+v", mappedID(now[0]))
	}
}
