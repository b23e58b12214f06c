package opencl

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// TestBaseDirSharesCheckouts: two checkouts of a project in different
// places, built with absolute include paths, share one entry under a base
// directory each (KCACHE_BASE_DIR); an edit in one checkout still misses
// and computes with the new header, and without a base directory nothing
// is shared.
func TestBaseDirSharesCheckouts(t *testing.T) {
	tmp := t.TempDir()
	t.Chdir(t.TempDir())
	cache := filepath.Join(tmp, "cache")
	a, b := filepath.Join(tmp, "alice", "proj"), filepath.Join(tmp, "bob", "proj")
	for _, root := range []string{a, b} {
		if err := os.MkdirAll(filepath.Join(root, "inc"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, "inc", "scale.h"), "#define SCALE 3.0f\n", time.Hour)
	}
	build := func(root, base string) *BuiltProgram {
		ts := newTierSetWith(t, cache, CacheOptions{CommitDelay: -1, BaseDir: base})
		p := ts.program(t, Source{Code: []byte(headerSource), Options: "-I " + root + "/inc -cl-mad-enable"})
		ts.saxpy(t, p, map[string]float32{"3": 3, "4": 4}[string(readScale(t, root))])
		return p
	}
	if p := build(a, a); p.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("first checkout: %v, want built", p.Outcome)
	}
	if p := build(b, b); p.Outcome != kcache.OutcomeDisk {
		t.Errorf("second checkout under its base directory: %v, want disk", p.Outcome)
	}
	if p := build(b, ""); p.Outcome != kcache.OutcomeBuilt {
		t.Errorf("second checkout without a base directory: %v, want built", p.Outcome)
	}
	writeFile(t, filepath.Join(b, "inc", "scale.h"), "#define SCALE 4.0f\n", time.Minute)
	if p := build(b, b); p.Outcome != kcache.OutcomeBuilt {
		t.Errorf("edited header under the base directory: %v, want built", p.Outcome)
	}
}

// readScale returns the digit SCALE has in root's header.
func readScale(t *testing.T, root string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "inc", "scale.h"))
	if err != nil {
		t.Fatal(err)
	}
	return data[len("#define SCALE ") : len("#define SCALE ")+1]
}
