package opencl

import (
	"os"
	"os/exec"
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
//
// PoCL keeps the flags for the rest of the process once a build found
// them: the test runs in a process of its own.
func TestEnvSetAfterNewCache(t *testing.T) {
	if !inChild(t) {
		return
	}
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

// TestEnvSetWithCallersEnviron: a cache given an environment for its keys
// (CacheOptions.Environ) builds with the driver of this process, which
// reads the process's: POCL_EXTRA_BUILD_FLAGS set in the process was
// served the program built before, from the key without them (SCALE 1
// where PoCL compiles 5). Where the process's variables differ from the
// keys', the program is built and not stored. In a process of its own,
// as TestEnvSetAfterNewCache.
func TestEnvSetWithCallersEnviron(t *testing.T) {
	if !inChild(t) {
		return
	}
	dir := t.TempDir()
	ts := newTierSet(t, dir)
	ts.cache = NewCache(ts.ctx, ts.bins, CacheOptions{CommitDelay: -1, Environ: []string{}})
	t.Cleanup(ts.cache.Close)
	src := Source{Code: saxpyWith("#ifndef SCALE\n#define SCALE 1.0f\n#endif")}
	ts.saxpy(t, ts.program(t, src), 1)
	stored := len(binFiles(t, dir))
	t.Setenv("POCL_EXTRA_BUILD_FLAGS", "-DSCALE=5.0f")
	q := ts.program(t, src)
	if q.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("after the flags were set: outcome %v, want built", q.Outcome)
	}
	ts.saxpy(t, q, 5)
	if n := len(binFiles(t, dir)); n != stored {
		t.Errorf("%d binaries stored, want %d: the build with the process's flags went under a key without them", n, stored)
	}
}

// TestPoCLExtraFlagsKept: PoCL keeps POCL_EXTRA_BUILD_FLAGS from the first
// build that found it set. The key held the variable as the environment
// had it: unset after a build with -DSCALE=5.0f, the next build's key was
// that of no flags, PoCL compiled SCALE 5 and a new process without the
// flags was served it. Each step runs in a process of its own.
func TestPoCLExtraFlagsKept(t *testing.T) {
	if os.Getenv(childEnv) != t.Name() {
		dir := t.TempDir()
		inChild(t, "KCACHE_TEST_DIR="+dir, "KCACHE_TEST_STEP=set-then-unset")
		inChild(t, "KCACHE_TEST_DIR="+dir, "KCACHE_TEST_STEP=never-set")
		return
	}
	dir := os.Getenv("KCACHE_TEST_DIR")
	src := Source{Code: saxpyWith("#ifndef SCALE\n#define SCALE 1.0f\n#endif")}
	process := func() *tierSet {
		ts := newTierSet(t, dir)
		ts.cache = NewCache(ts.ctx, ts.bins, CacheOptions{CommitDelay: -1}) // the process's environment
		t.Cleanup(ts.cache.Close)
		return ts
	}
	switch os.Getenv("KCACHE_TEST_STEP") {
	case "set-then-unset":
		ts := process()
		os.Setenv("POCL_EXTRA_BUILD_FLAGS", "-DSCALE=5.0f")
		ts.saxpy(t, ts.program(t, src), 5)
		os.Unsetenv("POCL_EXTRA_BUILD_FLAGS")
		// A cache with nothing in memory: PoCL still builds with SCALE 5.
		again := process()
		again.saxpy(t, again.program(t, src), 5)
	case "never-set":
		ts := process()
		ts.saxpy(t, ts.program(t, src), 1)
	}
}

// childEnv names the test a child process of the test binary runs
// (inChild).
const childEnv = "KCACHE_OPENCL_TEST_CHILD"

// inChild reports whether the test runs in a child process of its own;
// where it does not, it runs the test again in one, with env added to the
// environment, and fails with the child's output if the child fails.
// PoCL keeps POCL_EXTRA_BUILD_FLAGS for the rest of a process once a build
// found it set: a test that sets it would change every later build.
func inChild(t *testing.T, env ...string) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v")
	cmd.Env = append(append(os.Environ(), childEnv+"="+t.Name()), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in a child process: %v\n%s", t.Name(), err, out)
	}
	return false
}

// TestStalePoCLDeviceMacroOption: PoCL gives clang its device's macros
// after the program's options, so -D__ENDIAN_LITTLE__=big is replaced by
// PoCL's -D__ENDIAN_LITTLE__=1 and #include XS(__ENDIAN_LITTLE__.h) reads
// 1.h. A key that took the option's value held big.h: a new process after
// an edit of 1.h was served the binary of the old 1.h.
func TestStalePoCLDeviceMacroOption(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	writeFile(t, filepath.Join(wd, "1.h"), "#define SCALE 1.0f\n", time.Hour)
	writeFile(t, filepath.Join(wd, "big.h"), "#define SCALE 9.0f\n", time.Hour)
	src := Source{Code: saxpyWith("#define S(x) #x\n#define XS(x) S(x)\n#include XS(__ENDIAN_LITTLE__.h)"), Options: "-D__ENDIAN_LITTLE__=big"}
	cache := t.TempDir()
	first := newTierSet(t, cache)
	first.saxpy(t, first.program(t, src), 1)
	writeFile(t, filepath.Join(wd, "1.h"), "#define SCALE 5.0f\n", time.Minute)
	second := newTierSet(t, cache)
	second.saxpy(t, second.program(t, src), 5)
}
