package opencl

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// saxpyWith returns headerSource's kernel (out = SCALE*x + y) with its
// include line replaced by include.
func saxpyWith(include string) []byte {
	_, body, _ := strings.Cut(headerSource, "\n")
	return []byte(include + "\n" + body)
}

// hashcatOptions are the options hashcat builds with: its kernels include
// their headers through M2S(INCLUDE_PATH/...).
const hashcatOptions = `-D INCLUDE_PATH=. -D "XM2S(x)=#x" -D "M2S(x)=XM2S(x)"`

// staleCheck builds src in a first process, runs change, and checks that a
// second process over the same disk tier rebuilds (not a disk hit) and
// computes with SCALE = after: the binary the cache serves is the one the
// changed files give.
func staleCheck(t *testing.T, src Source, before, after float32, change func()) {
	t.Helper()
	cache := t.TempDir()
	first := newTierSet(t, cache)
	p := first.program(t, src)
	if p.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("first build: outcome %v, want built", p.Outcome)
	}
	first.saxpy(t, p, before)
	if n := len(binFiles(t, cache)); n != 1 {
		t.Fatalf("%d binaries on disk after the first build, want 1", n)
	}
	change()
	second := newTierSet(t, cache)
	q := second.program(t, src)
	if q.Outcome != kcache.OutcomeBuilt {
		t.Fatalf("after the change: outcome %v, want built (a %v hit serves the old binary)", q.Outcome, q.Outcome)
	}
	second.saxpy(t, q, after)
}

// TestComputedIncludeEditRebuilds is hashcat's case: a header included
// through macros of the build options is edited between two processes.
func TestComputedIncludeEditRebuilds(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	writeFile(t, filepath.Join(wd, "inc_scale.cl"), "#define SCALE 1.0f\n", time.Hour)
	src := Source{Code: saxpyWith("#include M2S(INCLUDE_PATH/inc_scale.cl)"), Options: hashcatOptions}
	staleCheck(t, src, 1, 3, func() {
		writeFile(t, filepath.Join(wd, "inc_scale.cl"), "#define SCALE 3.0f\n", time.Minute)
	})
}

// TestWorkDirHeaderEditRebuilds: a source held in memory includes a header
// PoCL finds through the working directory.
func TestWorkDirHeaderEditRebuilds(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	writeFile(t, filepath.Join(wd, "scale.h"), "#define SCALE 1.0f\n", time.Hour)
	staleCheck(t, Source{Code: []byte(headerSource)}, 1, 2, func() {
		writeFile(t, filepath.Join(wd, "scale.h"), "#define SCALE 2.0f\n", time.Minute)
	})
}

// TestShadowingHeaderRebuilds: a header created in a directory searched
// before the one that held it takes its place. PoCL searches the working
// directory before the -I directories, for angled includes too.
func TestShadowingHeaderRebuilds(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	inc := t.TempDir()
	writeFile(t, filepath.Join(inc, "scale.h"), "#define SCALE 1.0f\n", time.Hour)
	src := Source{Code: saxpyWith("#include <scale.h>"), Options: "-I " + inc}
	staleCheck(t, src, 1, 4, func() {
		writeFile(t, filepath.Join(wd, "scale.h"), "#define SCALE 4.0f\n", time.Minute)
	})
}

// TestDeclaredDependencyEditRebuilds: a file the caller declares enters
// the key, though no include names it.
func TestDeclaredDependencyEditRebuilds(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	data := filepath.Join(dir, "scale.def")
	writeFile(t, data, "1", time.Hour)
	// The program reads no file: SCALE comes in by option, as a build
	// script would put the data file's value there. Only the declaration
	// ties the key to the file.
	src := Source{Code: saxpyWith(""), Options: "-DSCALE=1.0f", Depends: []string{data}}
	cache := t.TempDir()
	first := newTierSet(t, cache)
	before := first.program(t, src)
	writeFile(t, data, "2", time.Minute)
	after := newTierSet(t, cache).program(t, src)
	if after.Outcome != kcache.OutcomeBuilt || after.BlobID() == before.BlobID() {
		t.Fatalf("declared dependency edited: outcome %v, same key %v; want a new build", after.Outcome, after.BlobID() == before.BlobID())
	}
}

// versionInclude names its header through __OPENCL_VERSION__, which only
// the compiler knows; openCLVersions are its possible values.
const versionInclude = "#define S(x) #x\n#define XS(x) S(x)\n#include XS(__OPENCL_VERSION__.h)"

var openCLVersions = []int{100, 110, 120, 200, 210, 220, 300}

// TestUnexpandableIncludeIsUncacheable: an include named through a macro
// only the compiler knows (__OPENCL_VERSION__) cannot be resolved, and no
// key can follow it (its name could hold "..", or be absolute): the
// program is built every time and never stored.
func TestUnexpandableIncludeIsUncacheable(t *testing.T) {
	t.Chdir(t.TempDir())
	inc := t.TempDir()
	for _, v := range openCLVersions {
		writeFile(t, filepath.Join(inc, fmt.Sprintf("%d.h", v)), "#define SCALE 1.0f\n", time.Hour)
	}
	src := Source{Code: saxpyWith(versionInclude), Options: "-I " + inc}
	cache := t.TempDir()
	for range 2 {
		ts := newTierSet(t, cache)
		p := ts.program(t, src)
		if p.Outcome != kcache.OutcomeBuilt {
			t.Fatalf("outcome %v, want built", p.Outcome)
		}
		ts.saxpy(t, p, 1)
	}
	if bins := binFiles(t, cache); len(bins) != 0 {
		t.Fatalf("an uncacheable program was stored: %v", bins)
	}
}

// TestUncacheableBuildsWithoutStoring: when the directories to key are too
// large to hold, the program is built and works but nothing is stored,
// and every request builds again.
func TestUncacheableBuildsWithoutStoring(t *testing.T) {
	t.Chdir(t.TempDir())
	inc := t.TempDir()
	for i := range 10_001 {
		if err := os.WriteFile(filepath.Join(inc, fmt.Sprintf("f%d.h", i)), []byte("#define SCALE 1.0f\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range openCLVersions {
		writeFile(t, filepath.Join(inc, fmt.Sprintf("%d.h", v)), "#define SCALE 1.0f\n", time.Hour)
	}
	src := Source{Code: saxpyWith(versionInclude), Options: "-I " + inc}
	cache := t.TempDir()
	ts := newTierSet(t, cache)
	for range 2 {
		p := ts.program(t, src)
		if p.Outcome != kcache.OutcomeBuilt {
			t.Fatalf("outcome %v, want built", p.Outcome)
		}
		ts.saxpy(t, p, 1)
	}
	if bins := binFiles(t, cache); len(bins) != 0 {
		t.Fatalf("an uncacheable program was stored: %v", bins)
	}
}

// TestTraceListsDependencies checks KCACHE_TRACE: every dependency of the
// key is logged with the rule that found it.
func TestTraceListsDependencies(t *testing.T) {
	f := testFixture(t)
	wd := t.TempDir()
	t.Chdir(wd)
	writeFile(t, filepath.Join(wd, "inc_scale.cl"), "#define SCALE 1.0f\n", time.Hour)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := disk.Open(disk.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Code: saxpyWith("#include M2S(INCLUDE_PATH/inc_scale.cl)\n#include \"missing.h\""), Options: hashcatOptions}
	key := func(trace bool) kcache.Digest {
		cfg := kcache.DefaultConfig(func(string) string { return "" })
		cfg.Trace = trace
		c := NewCache(f.ctx, kcache.New(cfg, log, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st}), CacheOptions{Environ: []string{}})
		defer c.Close()
		k, err := c.Key(f.dev, src)
		if err != nil {
			t.Fatal(err)
		}
		return k.Prepare().Digests().Key
	}
	// Without KCACHE_TRACE the headers come without the trace, and the
	// key is the same.
	untraced := key(false)
	if strings.Contains(logs.String(), "kcache dependency") {
		t.Fatalf("dependencies logged without KCACHE_TRACE:\n%s", logs.String())
	}
	if traced := key(true); traced != untraced {
		t.Fatalf("key %v with KCACHE_TRACE, %v without", traced, untraced)
	}
	for _, want := range []string{
		"dependency.rule=computed-include dependency.name=./inc_scale.cl dependency.path=" + wd + "/./inc_scale.cl dependency.digest=",
		"dependency.rule=absent dependency.name=missing.h dependency.path=" + wd + "/missing.h",
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("trace lacks %q:\n%s", want, logs.String())
		}
	}
}
