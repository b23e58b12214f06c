package cuda

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// factorSource writes FACTOR, from the header factor.h, to out[0].
const factorSource = "#include \"factor.h\"\nextern \"C\" __global__ void k(int* out) { out[0] = FACTOR; }\n"

// factorOf loads src through c and returns what its kernel writes, and
// where the module came from.
func factorOf(t *testing.T, ctx *Context, c *Cache, src Source) (int, kcache.Outcome) {
	t.Helper()
	m, err := c.Module(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	p := devBuffer(t, ctx, make([]byte, 4))
	if err := launchK(ctx, m, 1, p); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4)
	if err := ctx.CopyFromDevice(out, p); err != nil {
		t.Fatal(err)
	}
	return int(int32(binary.LittleEndian.Uint32(out))), m.Outcome
}

// setFactor rewrites the header with the same size and the same
// modification time as every other version: only its ctime and content
// tell the edit. The time has nanoseconds, as a file system with fine
// timestamps gives, and the edit is left to settle past deps' window for
// such times (20 ms), so that the records hold it.
func setFactor(t *testing.T, path string, factor int) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#define FACTOR "+strconv.Itoa(factor)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
}

// factorTree writes inc/factor.h defining FACTOR as factor (setFactor)
// under a new directory, and returns the directory, the header and the
// source that includes it through -I.
func factorTree(t *testing.T, factor int) (dir, header string, src Source) {
	t.Helper()
	dir = t.TempDir()
	header = filepath.Join(dir, "inc", "factor.h")
	writeFile(t, header, "")
	setFactor(t, header, factor)
	return dir, header, Source{Code: []byte(factorSource), Options: []string{"-I", filepath.Join(dir, "inc")}}
}

// TestHitThenHeaderEdit: after disk hits (object tier off, so every call
// reads the entry and checks the key), a header edited in place with its
// size and modification time kept is seen by the same process, and by a
// new one that reads the dependency record; each runs the header's value,
// never the binary built from the text before.
func TestHitThenHeaderEdit(t *testing.T) {
	if os.Getenv("KCACHE_HITEDIT_CHILD") != "" {
		hitEditChild(t)
		return
	}
	ctx := requireGPU(t)
	dir, header, src := factorTree(t, 3)
	c := newTestCacheMem(t, ctx, filepath.Join(dir, "cache"), false)
	for i, want := range []kcache.Outcome{kcache.OutcomeBuilt, kcache.OutcomeDisk, kcache.OutcomeDisk} {
		if got, outcome := factorOf(t, ctx, c, src); got != 3 || outcome != want {
			t.Fatalf("call %d: FACTOR %d from %v, want 3 from %v", i, got, outcome, want)
		}
	}
	setFactor(t, header, 5)
	if got, outcome := factorOf(t, ctx, c, src); got != 5 || outcome != kcache.OutcomeBuilt {
		t.Errorf("same process after the edit: FACTOR %d from %v, want 5, built", got, outcome)
	}
	// A new process: the record of 5 holds; then the header goes to 7
	// and a second new process must see it.
	child := func(want int, outcome kcache.Outcome) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHitThenHeaderEdit$", "-test.v")
		cmd.Env = append(os.Environ(), "KCACHE_HITEDIT_CHILD="+dir, "KCACHE_HITEDIT_WANT="+strconv.Itoa(want)+" "+outcome.String())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestHitThenHeaderEdit") {
			t.Fatalf("child wanting FACTOR %d from %v: %v\n%s", want, outcome, err, out)
		}
	}
	child(5, kcache.OutcomeDisk)
	setFactor(t, header, 7)
	child(7, kcache.OutcomeBuilt)
	if got, outcome := factorOf(t, ctx, c, src); got != 7 || outcome != kcache.OutcomeDisk {
		t.Errorf("first process after the child built 7: FACTOR %d from %v, want 7 from disk", got, outcome)
	}
}

// hitEditChild is TestHitThenHeaderEdit's new process.
func hitEditChild(t *testing.T) {
	dir := os.Getenv("KCACHE_HITEDIT_CHILD")
	ctx := requireGPU(t)
	c := newTestCacheMem(t, ctx, filepath.Join(dir, "cache"), false)
	src := Source{Code: []byte(factorSource), Options: []string{"-I", filepath.Join(dir, "inc")}}
	got, outcome := factorOf(t, ctx, c, src)
	if have := strconv.Itoa(got) + " " + outcome.String(); have != os.Getenv("KCACHE_HITEDIT_WANT") {
		t.Errorf("FACTOR and outcome %q, want %q", have, os.Getenv("KCACHE_HITEDIT_WANT"))
	}
}

// TestHeaderSavedDuringCompile: a header saved after the key was computed
// and before NVRTC read it. The caller gets what NVRTC built (the new
// value), which is neither stored nor kept under the old header's key:
// after the edit is reverted, the same process and a new one both run the
// old value again, never the module built from the edit.
func TestHeaderSavedDuringCompile(t *testing.T) {
	ctx := requireGPU(t)
	dir, header, src := factorTree(t, 3)
	cacheDir := filepath.Join(dir, "cache")
	c := newTestCache(t, ctx, cacheDir)
	testHookBeforeCompile = func() { setFactor(t, header, 5) }
	got, outcome := factorOf(t, ctx, c, src)
	testHookBeforeCompile = nil
	if got != 5 || outcome != kcache.OutcomeBuilt {
		t.Fatalf("the build during the edit: FACTOR %d from %v, want 5, built", got, outcome)
	}
	if s := c.bins.Stats(); s.Unstored != 1 {
		t.Errorf("Unstored = %d, want 1", s.Unstored)
	}
	setFactor(t, header, 3) // reverted
	if got, outcome := factorOf(t, ctx, c, src); got != 3 {
		t.Errorf("the same process after the revert: FACTOR %d from %v, want 3", got, outcome)
	}
	if got, outcome := factorOf(t, ctx, newTestCache(t, ctx, cacheDir), src); got != 3 {
		t.Errorf("a new process after the revert: FACTOR %d from %v, want 3", got, outcome)
	}
}
