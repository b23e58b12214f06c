package opencl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/internal/keyparts"
)

// The key-exactness review's attacks through real PoCL: each hides the
// include of scale.h from a lexer that is not clang's, then edits
// scale.h; a new process must rebuild and compute with the new SCALE.
func TestStaleLexerThroughPoCL(t *testing.T) {
	_, body, _ := strings.Cut(headerSource, "\n")
	for name, include := range map[string]string{
		"lone CR":            "// a comment\r#include \"scale.h\"\r",
		"byte order mark":    "\xEF\xBB\xBF#include \"scale.h\"\n",
		"trigraph":           "??=include \"scale.h\"\n",
		"trigraph splice":    "#??/\ninclude \"scale.h\"\n",
		"splice with blanks": "#\\  \ninclude \"scale.h\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			wd := t.TempDir()
			t.Chdir(wd)
			writeFile(t, filepath.Join(wd, "scale.h"), "#define SCALE 1.0f\n", time.Hour)
			staleCheck(t, Source{Code: []byte(include + body)}, 1, 2, func() {
				writeFile(t, filepath.Join(wd, "scale.h"), "#define SCALE 2.0f\n", time.Minute)
			})
		})
	}
}

// TestStalePoCLTempDir: PoCL compiles the text from a file in its cache
// directory, so a quoted include is looked up there first.
func TestStalePoCLTempDir(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	writeFile(t, filepath.Join(wd, "scale.h"), "#define SCALE 1.0f\n", time.Hour)
	dir := keyparts.PoCLTempDir(os.LookupEnv)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	shadow := filepath.Join(dir, "scale.h")
	t.Cleanup(func() { os.Remove(shadow) })
	staleCheck(t, Source{Code: []byte(headerSource)}, 1, 6, func() {
		writeFile(t, shadow, "#define SCALE 6.0f\n", time.Minute)
	})
}

// TestStaleHeaderSavedDuringBuild: a header edited after the key was
// computed and before the compiler read it. The program is the one the
// compiler built, and is neither stored nor kept under the old header's
// key: after the edit is reverted, neither the same process nor a new one
// may be served it.
func TestStaleHeaderSavedDuringBuild(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	header := filepath.Join(wd, "scale.h")
	writeFile(t, header, "#define SCALE 1.0f\n", time.Hour)
	cache := t.TempDir()
	first := newTierSet(t, cache)
	testHookBeforeCompile = func() { writeFile(t, header, "#define SCALE 7.0f\n", time.Hour) }
	p := first.program(t, Source{Code: []byte(headerSource)})
	testHookBeforeCompile = nil
	first.saxpy(t, p, 7)
	if n := len(binFiles(t, cache)); n != 0 {
		t.Fatalf("%d binaries stored from a build whose header changed under it", n)
	}
	if s := first.bins.Stats(); s.Unstored != 1 {
		t.Errorf("Unstored = %d, want 1", s.Unstored)
	}
	p.Release()
	writeFile(t, header, "#define SCALE 1.0f\n", time.Hour) // reverted
	// The same process, after the revert: the program built from 7.0 was
	// kept by no tier, its object tier included, under 1.0's key.
	again := first.program(t, Source{Code: []byte(headerSource)})
	if again.Outcome != kcache.OutcomeBuilt {
		t.Errorf("the same process after the revert: outcome %v, want built", again.Outcome)
	}
	first.saxpy(t, again, 1)
	// A new process finds what the same process built from 1.0 after the
	// revert, and only that.
	second := newTierSet(t, cache)
	q := second.program(t, Source{Code: []byte(headerSource)})
	second.saxpy(t, q, 1)
}

// TestEnvSetAfterNewCache: a variable PoCL reads at each build
// (POCL_EXTRA_BUILD_FLAGS) set by the application after it made the
// cache keys the next build, which must compute with the flags' SCALE,
// not be served the program built before them.
func TestEnvSetAfterNewCache(t *testing.T) {
	ts := newTierSet(t, t.TempDir())
	ts.cache = NewCache(ts.ctx, ts.bins, CacheOptions{CommitDelay: -1}) // the process's environment
	t.Cleanup(ts.cache.Close)
	src := Source{Code: saxpyWith("#ifndef SCALE\n#define SCALE 1.0f\n#endif")}
	p := ts.program(t, src)
	ts.saxpy(t, p, 1)
	t.Setenv("POCL_EXTRA_BUILD_FLAGS", "-DSCALE=5.0f")
	q := ts.program(t, src)
	if q.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("after the flags were set: outcome %v, want built (a %v hit serves the program without them)", q.Outcome, q.Outcome)
	}
	ts.saxpy(t, q, 5)
}

// TestHeaderSavedAndScannedDuringBuild: a header edited after the key was
// computed and before the compiler read it, and scanned meanwhile by
// another request of the process (its key is the new text's). Whether the
// build may be stored was asked of the scanner's last scan of the source,
// which was that request's and held: the program PoCL built from 7.0 was
// stored under 1.0's key, and served after the revert. It is asked of the
// scan the key was made from.
func TestHeaderSavedAndScannedDuringBuild(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	header := filepath.Join(wd, "scale.h")
	writeFile(t, header, "#define SCALE 1.0f\n", time.Hour)
	cache := t.TempDir()
	first := newTierSet(t, cache)
	src := Source{Code: []byte(headerSource)}
	testHookBeforeCompile = func() {
		writeFile(t, header, "#define SCALE 7.0f\n", time.Hour)
		if _, err := first.cache.Key(testFixture(t).dev, src); err != nil {
			t.Error(err)
		}
	}
	p := first.program(t, src)
	testHookBeforeCompile = nil
	first.saxpy(t, p, 7)
	if n := len(binFiles(t, cache)); n != 0 {
		t.Errorf("%d binaries stored from a build whose header changed under it", n)
	}
	p.Release()
	writeFile(t, header, "#define SCALE 1.0f\n", time.Hour) // reverted
	second := newTierSet(t, cache)
	q := second.program(t, src)
	second.saxpy(t, q, 1)
}
