package keyparts

import (
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
		d, err := dynSections.read(path)
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
