package deps

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRawObserveIsObserve: the check of a memo's observations by a bare
// stat answers as the scan's os.Stat did, for every kind of place a scan
// observes: a file, a directory, a place that does not exist, one under a
// file (ENOTDIR), symbolic links to each, a dangling link, a FIFO.
func TestRawObserveIsObserve(t *testing.T) {
	root := tree(t, map[string]string{"f.h": "int x;\n", "d/g.h": ""})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("f.h", filepath.Join(root, "lf")))
	must(os.Symlink("d", filepath.Join(root, "ld")))
	must(os.Symlink("nowhere", filepath.Join(root, "dangling")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	now := time.Now()
	// Names beside the stack buffer's bound (statNameMax) and past it, and
	// one no C string holds whole: each must answer as os.Stat does.
	long := func(n int) string { return strings.Repeat("l/", n/2)[:n-len(root)-1] }
	names := []string{"f.h", "d", "d/g.h", "missing.h", "f.h/under", "lf", "ld", "ld/g.h", "dangling", "fifo", "", "d/../f.h",
		"f.h\x00x", long(511), long(512), long(700), long(5000)}
	for _, name := range names {
		path := filepath.Join(root, name)
		if name == "d/../f.h" || strings.HasPrefix(name, "l/") || strings.Contains(name, "\x00") {
			path = root + "/" + name // as the compiler opens it, not cleaned
		}
		fi, err := os.Stat(path)
		want := observe(path, fi, err, now)
		if got := rawObserve(path, now); got != want {
			t.Errorf("%s: raw %+v, os.Stat %+v", name, got, want)
		}
	}
	for _, at := range []time.Time{now.Add(-time.Hour), now.Add(time.Hour)} { // too new, then settled
		path := filepath.Join(root, "f.h")
		fi, err := os.Stat(path)
		if got, want := rawObserve(path, at), observe(path, fi, err, at); got != want {
			t.Errorf("at %v: raw %+v, os.Stat %+v", at, got, want)
		}
	}
}
