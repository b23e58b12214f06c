package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPrivatePoCLDir checks when the layer gives the process a PoCL
// directory of its own, and that it removes the directories of processes
// that have exited.
func TestPrivatePoCLDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	set := map[string]string{}
	setenv := func(k, v string) error { set[k] = v; return nil }
	getenv := func(v string) func(string) string {
		return func(k string) string {
			if k == envPoCLKernelCache {
				return v
			}
			return ""
		}
	}
	for _, v := range []string{"", "1"} {
		if dir, err := privatePoCLDir(getenv(v), setenv); dir != "" || err != nil || len(set) != 0 {
			t.Errorf("%s=%q: dir %q, err %v, set %v; want nothing done: PoCL's own cache keeps processes apart", envPoCLKernelCache, v, dir, err, set)
		}
	}

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(os.TempDir(), "kcache-pocl-"+strconv.Itoa(os.Getuid()))
	orphan := filepath.Join(parent, strconv.Itoa(dead.Process.Pid))
	live := filepath.Join(parent, strconv.Itoa(os.Getppid()))
	for _, d := range []string{orphan, live} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := privatePoCLDir(getenv("0"), setenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(parent, strconv.Itoa(os.Getpid())); dir != want || set[envPoCLCacheDir] != want {
		t.Errorf("dir %q, %s=%q; want %q", dir, envPoCLCacheDir, set[envPoCLCacheDir], want)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("the private directory was not made: %v", err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("the directory of an exited process is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the directory of a running process was removed: %v", err)
	}

	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := privatePoCLDir(getenv("0"), setenv); err == nil {
		t.Error("a parent directory others can write was accepted")
	}
}

// TestConcurrentWarmStarts starts four copies of a pyopencl script at
// once, several times, on a warm cache, with one HOME (so one PoCL cache
// directory): with PoCL's own cache off, PoCL's files of a program made
// from the same binary in several processes at once must not collide (they
// aborted 2 to 3 of 24 processes); with it on, the recommended
// configuration, the layer starts beside the driver on a thread of its own
// in every copy.
func TestConcurrentWarmStarts(t *testing.T) {
	for _, poclCache := range []string{"0", "1"} {
		t.Run("POCL_KERNEL_CACHE="+poclCache, func(t *testing.T) {
			a, dir, cache := headerApp(t)
			environ := append(env(t, cache), "POCL_KERNEL_CACHE="+poclCache)
			want := a.runEnv(dir, environ)
			if want.err != nil {
				t.Fatal(want.err)
			}
			const rounds, copies = 4, 4
			for r := range rounds {
				runs := make([]run, copies)
				var wg sync.WaitGroup
				for i := range runs {
					wg.Go(func() { runs[i] = a.runEnv(dir, environ) })
				}
				wg.Wait()
				for i, got := range runs {
					what := "round " + strconv.Itoa(r) + " copy " + strconv.Itoa(i)
					checkRun(t, a, what, got, want.stdout, 0)
					if strings.Contains(got.stderr, "failed") {
						t.Errorf("%s: %s", what, got.stderr)
					}
				}
			}
		})
	}
}

// TestRecordsAcrossPrivatePoCLDirs: with PoCL's cache off each process
// compiles from a PoCL directory of its own, which PoCL searches first and
// so every scan names. The dependency records of the first process's
// scans serve the next process, which writes none again; a header edited
// since is still seen.
func TestRecordsAcrossPrivatePoCLDirs(t *testing.T) {
	a, dir, cache := headerApp(t)
	if first := a.run(t, dir, cache); first.err != nil {
		t.Fatal(first.err)
	}
	stamps := func() map[string]time.Time {
		out := map[string]time.Time{}
		for path := range dependencyRecordFiles(cache) {
			if fi, err := os.Stat(path); err == nil {
				out[path] = fi.ModTime()
			}
		}
		return out
	}
	records := stamps()
	if len(records) == 0 {
		t.Fatal("no dependency record stored with PoCL's cache off")
	}
	second := a.run(t, dir, cache)
	if second.err != nil {
		t.Fatal(second.err)
	}
	if second.hits != a.programs || second.misses != 0 {
		t.Errorf("second process: %d hits, %d misses, want %d and 0", second.hits, second.misses, a.programs)
	}
	if got := stamps(); !maps.Equal(got, records) {
		t.Errorf("the second process wrote dependency records again:\n%v\nafter the first:\n%v", got, records)
	}
	writeFile(t, filepath.Join(dir, "scale.h"), "#define SCALE 3.0f\n")
	edited := a.run(t, dir, cache)
	if edited.err != nil {
		t.Fatal(edited.err)
	}
	if edited.misses != 1 || !strings.Contains(edited.stdout, "scaled sum 98176.0") {
		t.Errorf("after the header edit: %d misses, want 1; output:\n%s", edited.misses, edited.stdout)
	}
}
