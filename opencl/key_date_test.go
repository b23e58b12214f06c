package opencl

import (
	"slices"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
)

// TestDayTurnedDuringBuild: a source that expands __DATE__ is keyed by the
// day; when the day turns between the key and the compiler's preprocessing
// (simulated by moving TZ a day on, which clang's localtime reads at each
// build), the binary may hold the next day and must not be stored under
// the key of the first.
func TestDayTurnedDuringBuild(t *testing.T) {
	t.Setenv("TZ", "Etc/GMT-14")
	t.Chdir(t.TempDir())
	cache := t.TempDir()
	ts := newTierSet(t, cache)
	testHookBeforeCompile = func() { t.Setenv("TZ", "Etc/GMT+12") } // 26 hours back: another day
	defer func() { testHookBeforeCompile = nil }()
	src := Source{Code: saxpyWith("__constant char day[] = __DATE__;\n#define SCALE 1.0f")}
	key, err := ts.cache.Key(testFixture(t).dev, src)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(key.Image.Headers, func(h kcache.Header) bool { return h.Name == deps.DateHeader }) {
		t.Fatalf("the key holds no day: %v", key.Image.Headers)
	}
	p := ts.program(t, src)
	ts.saxpy(t, p, 1)
	if n := len(binFiles(t, cache)); n != 0 {
		t.Fatalf("%d binaries stored from a build whose day turned under it", n)
	}
	if s := ts.bins.Stats(); s.Unstored != 1 {
		t.Errorf("Unstored = %d, want 1", s.Unstored)
	}
}
