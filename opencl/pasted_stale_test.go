package opencl

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kcache/kcache/deps"
)

const tsKernel = `#include "ts.h"
__kernel void ts(__global char* out) {
	size_t i = get_global_id(0);
	if (i < sizeof(TS)) out[i] = TS[i];
}`

func readTS(t *testing.T, ts *tierSet, p *BuiltProgram) string {
	t.Helper()
	k, err := p.Kernel("ts")
	if err != nil {
		t.Fatal(err)
	}
	buf, err := ts.ctx.NewBuffer(MemReadWrite, 256)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Release()
	ev, err := k.Run(ts.q, []int{256}, nil, buf)
	if err != nil {
		t.Fatal(err)
	}
	ev.Wait()
	ev.Release()
	out := make([]byte, 256)
	if err := ts.q.Read(buf, 0, out); err != nil {
		t.Fatal(err)
	}
	for i, c := range out {
		if c == 0 {
			return string(out[:i])
		}
	}
	return string(out)
}

// __TIMESTAMP__ is the mtime of the file that expands it, here pasted from
// pieces (deps/paste.go): touching the header (content unchanged) must not
// leave a new process the old time.
func TestPastedTimestampNotServed(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	h := filepath.Join(wd, "ts.h")
	writeFile(t, h, "#define CAT(a, b) a##b\n__constant char TS[] = CAT(__TIMES, TAMP__);\n", 48*time.Hour)
	src := Source{Code: []byte(tsKernel)}
	cache := t.TempDir()
	first := newTierSet(t, cache)
	p := first.program(t, src)
	got1 := readTS(t, first, p)
	t.Logf("first (%v): %q", p.Outcome, got1)
	old := time.Now().Add(-24 * time.Hour)
	os.Chtimes(h, old, old) // touch: same content, other mtime
	time.Sleep(settle)
	second := newTierSet(t, cache)
	q := second.program(t, src)
	got2 := readTS(t, second, q)
	// What the compiler gives now: a cache of its own builds it.
	fresh := newTierSet(t, t.TempDir())
	r := fresh.program(t, src)
	want := readTS(t, fresh, r)
	t.Logf("fresh build now (%v): %q", r.Outcome, want)
	t.Logf("second (%v): %q", q.Outcome, got2)
	if got2 != want {
		t.Errorf("STALE: after touching ts.h a new process is served %q (outcome %v); the compiler now gives %q", got2, q.Outcome, want)
	}
}

// A pasted __DATE__ puts the day in the key, as a literal one does.
func TestPastedDateKeyed(t *testing.T) {
	ts := newTierSet(t, t.TempDir())
	for _, body := range []string{"__DATE__", "CAT(__DA, TE__)"} {
		src := Source{Code: []byte("#define CAT(a, b) a##b\n__constant char TS[] = " + body + ";\n__kernel void ts(__global char* out) { size_t i = get_global_id(0); if (i < sizeof(TS)) out[i] = TS[i]; }")}
		key, err := ts.cache.Key(testFixture(t).dev, src)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		hasDay := false
		for _, h := range key.Image.Headers {
			hasDay = hasDay || h.Name == deps.DateHeader
		}
		p, err := ts.cache.Program(context.Background(), testFixture(t).dev, src)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: key holds the day: %v; program says %q", body, hasDay, readTS(t, ts, p))
		if !hasDay {
			t.Errorf("%s: the key does not hold the day", body)
		}
		p.Release()
	}
}

// A base directory's relocation is refused for a source expanding a
// pasted __FILE__, as for a literal one: two checkouts must not share a
// key, or the second is served the first one's path.
func TestPastedFileNotRelocated(t *testing.T) {
	tmp := t.TempDir()
	t.Chdir(t.TempDir())
	cache := filepath.Join(tmp, "cache")
	a, b := filepath.Join(tmp, "alice", "proj"), filepath.Join(tmp, "bob", "proj")
	for _, root := range []string{a, b} {
		os.MkdirAll(filepath.Join(root, "inc"), 0o755)
		writeFile(t, filepath.Join(root, "inc", "ts.h"), "#define CAT(a, b) a##b\n__constant char TS[] = CAT(__FI, LE__);\n", time.Hour)
	}
	for _, root := range []string{a, b} {
		ts := newTierSetWith(t, cache, CacheOptions{CommitDelay: -1, BaseDir: root})
		p := ts.program(t, Source{Code: []byte(tsKernel), Options: "-I " + root + "/inc"})
		got := readTS(t, ts, p)
		t.Logf("checkout %s: %v, program says %q", root, p.Outcome, got)
		if want := root + "/inc/ts.h"; got != want {
			t.Errorf("STALE: checkout %s served %q (%v), want %q", root, got, p.Outcome, want)
		}
	}
}

// A __has_include pasted from pieces tests for a file the key must hold:
// creating the file later flips the branch, and must change the key.
func TestPastedHasIncludeProbed(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	src := Source{Code: saxpyWith("#define CAT(a, b) a##b\n#if CAT(__has_, include)(\"flag.h\")\n#define SCALE 2.0f\n#else\n#define SCALE 1.0f\n#endif")}
	staleCheck(t, src, 1, 2, func() {
		writeFile(t, filepath.Join(wd, "flag.h"), "\n", time.Hour)
	})
}

// clang looks up the file of "#pragma GCC dependency" along the include
// path, fails the build when it is missing and warns when it is newer: a
// program that runs it is never served from the cache.
func TestPragmaDependencyUncacheable(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	dep := filepath.Join(wd, "dep.h")
	writeFile(t, dep, "/* dep */\n", time.Hour)
	src := Source{Code: saxpyWith("#pragma GCC dependency \"dep.h\"\n#define SCALE 1.0f")}
	cache := t.TempDir()
	first := newTierSet(t, cache)
	p := first.program(t, src)
	first.saxpy(t, p, 1)
	if n := len(binFiles(t, cache)); n != 0 {
		t.Errorf("first: %v, %d binaries stored for an uncacheable source", p.Outcome, n)
	}
	os.Remove(dep)
	time.Sleep(settle)
	// What the compiler says now, without the cache:
	f := testFixture(t)
	raw, _ := f.ctx.ProgramWithSource(string(src.Code))
	rawErr := raw.Build(nil, src.Options)
	t.Logf("direct build after removing dep.h: %v", rawErr)
	second := newTierSet(t, cache)
	q, err := second.cache.Program(context.Background(), f.dev, src)
	if err == nil {
		t.Logf("second process: %v", q.Outcome)
		q.Release()
		if rawErr != nil {
			t.Errorf("served a cached binary (%v) for a source the compiler now rejects", q.Outcome)
		}
	} else {
		t.Logf("second process error: %v", err)
	}
	if rawErr == nil {
		t.Fatal("the compiler built without dep.h; the test shows nothing")
	}
}
