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
