package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache/internal/layerstore"
)

// libPath is the layer, built once for the tests as users build it, and
// workerPath the kcache command, its background worker.
var (
	libPath   string
	workerBin string
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kcache-layer-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	libPath = filepath.Join(dir, "libkcache-layer.so")
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goCmd, "build", "-buildmode=c-shared", "-o", libPath, ".").CombinedOutput()
	if err != nil {
		buildErr = fmt.Errorf("building the layer: %w\n%s", err, out)
	}
	workerBin = filepath.Join(dir, "kcache")
	if out, err := exec.Command(goCmd, "build", "-o", workerBin, "../cmd/kcache").CombinedOutput(); err != nil && buildErr == nil {
		buildErr = fmt.Errorf("building the kcache command (the layer's worker): %w\n%s", err, out)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireReal fails the test in CI (KCACHE_REQUIRE_REAL=1) when something
// the test runs is missing, and skips it elsewhere.
func requireReal(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
		t.Fatalf("%s is required (KCACHE_REQUIRE_REAL=1): %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}

func requireLayer(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	_, err := os.Stat("/etc/OpenCL/vendors/pocl.icd")
	if v := os.Getenv("OCL_ICD_VENDORS"); v != "" {
		_, err = os.Stat(v)
	}
	requireReal(t, "PoCL (pocl-opencl-icd)", err)
}

// app is an unmodified OpenCL application the layer is tried with.
type app struct {
	name     string
	argv     []string
	programs int // distinct programs it builds from source
	// setup prepares the working directory (scripts, headers).
	setup func(t *testing.T, dir string)
	// normalize removes what changes between runs of the same binaries
	// (timings, dates) from the output.
	normalize func(string) string
	// extraEnv is added to every run's environment.
	extraEnv []string
}

// run is one run of an application.
type run struct {
	stdout, stderr string
	misses, hits   int // programs built from source / taken from the cache
	err            error
}

var (
	digits = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
	speed  = regexp.MustCompile(`N [kMGT]?H/s`)
	blanks = regexp.MustCompile(` +`)
)

// normalizeNumbers keeps what a benchmark's output says, not what it
// measured: numbers, their units and the padding that aligns them go.
func normalizeNumbers(s string) string {
	return blanks.ReplaceAllString(speed.ReplaceAllString(digits.ReplaceAllString(s, "N"), "N H/s"), " ")
}

// env is the environment of one run: private driver and application
// caches (so that nothing but kcache carries builds between runs), and the
// layer when cache is not empty.
func env(t *testing.T, cache string) []string {
	home := t.TempDir()
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "KCACHE_") || strings.HasPrefix(name, "POCL_") || strings.HasPrefix(name, "XDG_") ||
			name == "OPENCL_LAYERS" || name == "HOME" {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "HOME="+home, "XDG_CACHE_HOME="+home+"/cache", "XDG_DATA_HOME="+home+"/data",
		"POCL_KERNEL_CACHE=0", "POCL_CACHE_DIR="+home+"/pocl", "PYOPENCL_NO_CACHE=1")
	if cache != "" {
		// Ten copies compiling at once on two cores can take minutes:
		// waiters must not give up and compile too.
		out = append(out, "OPENCL_LAYERS="+libPath, "KCACHE_DIR="+cache, "KCACHE_DEBUG=1", "KCACHE_BUILD_WAIT=30m",
			envWorker+"="+workerBin)
	}
	return out
}

func (a app) run(t *testing.T, dir, cache string) run {
	return a.runEnv(dir, append(env(t, cache), a.extraEnv...))
}

// runEnv runs the application in dir with the environment environ, and
// then waits for the background worker to store what the run ordered, so
// that the next run finds it.
func (a app) runEnv(dir string, environ []string) run {
	r := a.runOnly(dir, environ)
	if cache := envValue(environ, "KCACHE_DIR"); cache != "" && r.err == nil {
		r.err = waitWorker(cache)
	}
	return r
}

// workerWait bounds the wait for the background worker after a run: it
// builds each ordered program again, two cores shared with the test.
const workerWait = 10 * time.Minute

// waitWorker waits until the cache's queue of build orders is empty and no
// worker runs.
func waitWorker(cache string) error {
	ctx, cancel := context.WithTimeout(context.Background(), workerWait)
	defer cancel()
	return layerstore.NewQueue(cache).Wait(ctx)
}

// envValue returns the value of name in environ, "" if absent.
func envValue(environ []string, name string) string {
	v := ""
	for _, kv := range environ {
		if val, ok := strings.CutPrefix(kv, name+"="); ok {
			v = val
		}
	}
	return v
}

// runOnly runs the application in dir with the environment environ.
func (a app) runOnly(dir string, environ []string) run {
	cmd := exec.Command(a.argv[0], a.argv[1:]...)
	cmd.Dir = dir
	cmd.Env = environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := run{stdout: stdout.String(), stderr: stderr.String(), err: err}
	r.misses = strings.Count(r.stderr, `msg="kcache layer: miss"`)
	r.hits = strings.Count(r.stderr, `msg="kcache layer: hit"`)
	if err != nil {
		r.err = fmt.Errorf("%s: %w\nstdout:\n%s\nstderr:\n%s", a.name, err, r.stdout, r.stderr)
	}
	return r
}

// entries returns the entries the disk tier holds: one file each, the
// record's, which holds the binary (see package disk); dependency
// records are left out.
func entries(t *testing.T, cache string) []string {
	records := dependencyRecordFiles(cache)
	var out []string
	filepath.WalkDir(cache, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".src") && !records[path] {
			out = append(out, path)
		}
		return nil
	})
	return out
}

func apps(t *testing.T) []app {
	return []app{
		{
			name: "clpeak", argv: []string{"clpeak", "--kernel-latency"}, programs: 1,
			normalize: normalizeNumbers,
		},
		{
			name: "pyopencl", argv: []string{"/usr/bin/python3", "sums.py"}, programs: 2,
			setup: func(t *testing.T, dir string) {
				src, err := os.ReadFile("testdata/sums.py")
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, "sums.py"), string(src))
				writeFile(t, filepath.Join(dir, "scale.h"), "#define SCALE 2.0f\n")
			},
			normalize: func(s string) string { return s },
		},
		{
			name: "hashcat", argv: []string{"hashcat", "-b", "-m", "0", "--runtime", "1", "--force"}, programs: 6,
			normalize: normalizeNumbers,
		},
	}
}

// headerApp returns the application whose source includes a header from
// its working directory, that directory set up, and an empty cache.
func headerApp(t *testing.T) (a app, dir, cache string) {
	t.Helper()
	requireLayer(t)
	a = apps(t)[1]
	requireReal(t, a.name, a.available())
	dir, cache = t.TempDir(), t.TempDir()
	a.setup(t, dir)
	return a, dir, cache
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// available checks that the application is installed.
func (a app) available() error {
	if _, err := exec.LookPath(a.argv[0]); err != nil {
		return err
	}
	if a.name == "pyopencl" {
		if out, err := exec.Command(a.argv[0], "-c", "import pyopencl, numpy").CombinedOutput(); err != nil {
			return fmt.Errorf("python3-pyopencl: %w: %s", err, out)
		}
	}
	return nil
}

// concurrentRuns is how many copies of an application start at once on a
// cold cache.
const concurrentRuns = 10

// TestApplications runs each application without the layer, then ten
// copies at once through the layer on an empty cache, then once warm, then
// with a damaged entry: the output is the same each time, each program is
// compiled once across the ten, the warm run compiles nothing, and the
// damaged entry is rebuilt.
func TestApplications(t *testing.T) {
	requireLayer(t)
	for _, a := range apps(t) {
		t.Run(a.name, func(t *testing.T) {
			requireReal(t, a.name, a.available())
			dir := t.TempDir()
			if a.setup != nil {
				a.setup(t, dir)
			}
			base := a.run(t, dir, "")
			if base.err != nil {
				t.Fatal(base.err)
			}
			want := a.normalize(base.stdout)
			cache := t.TempDir()

			cold := make([]run, concurrentRuns)
			var wg sync.WaitGroup
			for i := range cold {
				wg.Go(func() { cold[i] = a.run(t, dir, cache) })
			}
			wg.Wait()
			misses := 0
			for i, r := range cold {
				if r.err != nil {
					t.Fatalf("cold run %d: %v", i, r.err)
				}
				if got := a.normalize(r.stdout); got != want {
					t.Errorf("cold run %d: output differs from the run without the layer:\n%s\nwant:\n%s", i, got, want)
				}
				if r.misses+r.hits != a.programs {
					t.Errorf("cold run %d: %d misses + %d hits, want %d programs\n%s", i, r.misses, r.hits, a.programs, r.stderr)
				}
				misses += r.misses
			}
			if misses != a.programs {
				t.Errorf("%d concurrent cold runs compiled %d programs, want each of the %d once", concurrentRuns, misses, a.programs)
			}
			if n := len(entries(t, cache)); n != a.programs {
				t.Errorf("cache holds %d entries, want %d", n, a.programs)
			}

			warm := a.run(t, dir, cache)
			checkRun(t, a, "warm", warm, want, 0)

			damage(t, smallest(t, entries(t, cache)))
			damaged := a.run(t, dir, cache)
			checkRun(t, a, "after damage", damaged, want, 1)
			again := a.run(t, dir, cache)
			checkRun(t, a, "after the rebuild", again, want, 0)
		})
	}
}

func checkRun(t *testing.T, a app, what string, r run, want string, misses int) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v", what, r.err)
	}
	if got := a.normalize(r.stdout); got != want {
		t.Errorf("%s: output differs from the run without the layer:\n%s\nwant:\n%s", what, got, want)
	}
	if r.misses != misses || r.hits != a.programs-misses {
		t.Errorf("%s: %d misses and %d hits, want %d and %d\n%s", what, r.misses, r.hits, misses, a.programs-misses, r.stderr)
	}
}

// smallest returns the smallest of files: its program is the cheapest to
// rebuild.
func smallest(t *testing.T, files []string) string {
	t.Helper()
	best, size := "", int64(-1)
	for _, f := range files {
		fi, err := os.Stat(f)
		if err == nil && (size < 0 || fi.Size() < size) {
			best, size = f, fi.Size()
		}
	}
	if best == "" {
		t.Fatal("no cache entries")
	}
	return best
}

// damage flips bytes in the middle of a stored binary, as a failing disk
// or a crashed writer would.
func damage(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 2; i < len(b)/2+64 && i < len(b); i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
