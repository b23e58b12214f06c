package cuda

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcache/kcache/internal/keyparts"
)

// TestMappedPath checks which file a library's key names: the file behind
// a symlink for an absolute name, the mapped file for a soname, and the
// name itself where nothing is mapped under it.
func TestMappedPath(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "libcuda.so.580.95.05")
	if err := os.WriteFile(real, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "libcuda.so.1")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, want string }{
		{link, want},
		{filepath.Join(dir, "gone.so.1"), filepath.Join(dir, "gone.so.1")},
		{"libkcache-not-loaded.so.1", "libkcache-not-loaded.so.1"},
	}
	for _, tc := range cases {
		if got := mappedPath(tc.name); got != tc.want {
			t.Errorf("mappedPath(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	// A library this process has mapped, asked for by another version of
	// its soname: the file in use, whatever its version, is the answer.
	mapped := keyparts.MappedFiles()
	for _, f := range mapped {
		base := filepath.Base(f)
		i := strings.Index(base, ".so.")
		if i <= 0 || !filepath.IsAbs(f) {
			continue
		}
		name := base[:i] + ".so.0"
		got := mappedPath(name)
		if !slices.Contains(mapped, got) || !strings.HasPrefix(filepath.Base(got), base[:i]+".so") {
			t.Errorf("mappedPath(%q) = %q, want a mapped %s.so* file", name, got, base[:i])
		}
		return
	}
	t.Log("no versioned shared library mapped into this process (a static binary): the soname case is not checked")
}
