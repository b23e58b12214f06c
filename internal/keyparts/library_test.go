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

// TestICDLibraries checks which mapped files count as the driver and how
// several drivers' identities are joined.
func TestICDLibraries(t *testing.T) {
	vendors, libs := t.TempDir(), t.TempDir()
	writeLib(t, filepath.Join(vendors, "a.icd"), "libdrva.so.2\n", time.Now())
	writeLib(t, filepath.Join(vendors, "b.icd"), "/opt/b/lib/libdrvb.so", time.Now())
	writeLib(t, filepath.Join(vendors, "c.txt"), "libother.so", time.Now())
	a, b := filepath.Join(libs, "libdrva.so.2"), filepath.Join(libs, "libdrvb.so")
	ta, tb := time.Unix(1700000000, 1), time.Unix(1600000000, 7)
	writeLib(t, a, "aaa", ta)
	writeLib(t, b, "bbbbbbb", tb)
	writeLib(t, filepath.Join(libs, "libother.so"), "o", ta)
	for _, tc := range []struct {
		name   string
		mapped []string
		want   Library
	}{
		{"none", []string{"/usr/bin/app", filepath.Join(libs, "libother.so")}, Library{}},
		{"one", []string{"/usr/bin/app", a}, Library{Path: a, Size: 3, MTime: ta.UnixNano()}},
		{"two, joined in map order", []string{b, a}, Library{Path: b + ":" + a, Size: 10, MTime: tb.UnixNano() ^ ta.UnixNano()}},
		{"a named library gone from disk", []string{filepath.Join(t.TempDir(), "libdrva.so.2"), b}, Library{Path: b, Size: 7, MTime: tb.UnixNano()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := icdLibraries(vendors, tc.mapped); got != tc.want {
				t.Errorf("icdLibraries = %+v, want %+v", got, tc.want)
			}
		})
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
