package keyparts

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRawFSAsOS holds the search's own readers to os's and filepath's:
// the same bytes, names and matches, and not-exist errors where those
// give them.
func TestRawFSAsOS(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.conf", "b.conf", ".hidden.conf", "c.txt", "sub/x.conf", "sub2/include/opencl-c.h"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeLib(t, p, strings.Repeat(name, 1000), time.Now())
	}
	for _, p := range []string{filepath.Join(dir, "a.conf"), "/proc/self/status", filepath.Join(dir, "none")} {
		got, err := readFile(p)
		want, werr := os.ReadFile(p)
		if p == "/proc/self/status" {
			// Its content changes between reads; its first line does not.
			got, want = got[:bytes.IndexByte(got, '\n')], want[:bytes.IndexByte(want, '\n')]
		}
		if !bytes.Equal(got, want) || (err == nil) != (werr == nil) || errors.Is(werr, fs.ErrNotExist) != errors.Is(err, fs.ErrNotExist) {
			t.Errorf("readFile(%s) = %d bytes, %v; os.ReadFile %d bytes, %v", p, len(got), err, len(want), werr)
		}
	}
	names, err := dirNames(dir)
	entries, _ := os.ReadDir(dir)
	var want []string
	for _, e := range entries {
		want = append(want, e.Name())
	}
	slices.Sort(names)
	if err != nil || !slices.Equal(names, want) {
		t.Errorf("dirNames = %q, %v; os.ReadDir %q", names, err, want)
	}
	if _, err := dirNames(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dirNames of nothing: %v", err)
	}
	for _, pattern := range []string{"*.conf", "*", "[ab].conf", "none/*.conf", "*/*.conf", "sub*/include/opencl-c*.h", "a.conf", "nothing", "*/x.conf"} {
		full := filepath.Join(dir, pattern)
		want, _ := filepath.Glob(full)
		if got := glob(full); !slices.Equal(got, want) {
			t.Errorf("glob(%s) = %q, filepath.Glob %q", pattern, got, want)
		}
	}
}
