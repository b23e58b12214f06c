package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kcache/kcache/internal/demo"
	"github.com/kcache/kcache/opencl"
)

// TestMain lets the test binary stand in for the kcache command: run with
// RUN_AS_KCACHE_CLI=1 it is the CLI, so the tests drive a real process.
func TestMain(m *testing.M) {
	if os.Getenv("RUN_AS_KCACHE_CLI") == "1" {
		main()
		os.Exit(0)
	}
	if file := os.Getenv(stuckWriterEnv); file != "" {
		stuckWriter(file)
	}
	os.Exit(m.Run())
}

func requireOpenCL(t *testing.T) {
	t.Helper()
	if err := opencl.Load(); err != nil {
		if os.Getenv("KCACHE_REQUIRE_REAL") == "1" {
			t.Fatalf("KCACHE_REQUIRE_REAL=1 but OpenCL is unavailable: %v", err)
		}
		t.Skipf("OpenCL unavailable: %v", err)
	}
}

// kcacheCmd returns the CLI as a child process with a cache in dir and a
// PoCL directory of its own (PoCL processes compiling at once must not
// share one).
func kcacheCmd(t testing.TB, dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RUN_AS_KCACHE_CLI=1", "KCACHE_DIR="+filepath.Join(dir, "cache"),
		"POCL_KERNEL_CACHE=0", "POCL_CACHE_DIR="+t.TempDir())
	return cmd
}

func runJSON(t *testing.T, cmd *exec.Cmd) ([]buildReport, int) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var reports []buildReport
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r buildReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not JSON: %q (stderr %s)", sc.Text(), stderr.String())
		}
		reports = append(reports, r)
	}
	return reports, code
}

const kernelSource = "__kernel void twice(__global int* v) { size_t i = get_global_id(0); v[i] *= FACTOR; }\n"

func writeKernel(t *testing.T, dir string) string {
	path := filepath.Join(dir, "twice.cl")
	if err := os.WriteFile(path, []byte(kernelSource), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBuildOutcomes(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	file := writeKernel(t, dir)
	cold, code := runJSON(t, kcacheCmd(t, dir, "build", "--json", "--options", "-DFACTOR=2", file, file))
	if code != 0 || len(cold) != 2 {
		t.Fatalf("exit %d, %d reports", code, len(cold))
	}
	if cold[0].Outcome != "built" || cold[1].Outcome != "memory" {
		t.Errorf("outcomes %q, %q; want built, memory", cold[0].Outcome, cold[1].Outcome)
	}
	if len(cold[0].Digest) != 64 || cold[0].Digest != cold[1].Digest || cold[0].File != file {
		t.Errorf("bad report %+v", cold[0])
	}
	warm, _ := runJSON(t, kcacheCmd(t, dir, "build", "--json", "--options", "-DFACTOR=2", file))
	if len(warm) != 1 || warm[0].Outcome != "disk" || warm[0].Digest != cold[0].Digest {
		t.Errorf("new process: %+v, want a disk hit with the same digest", warm)
	}
	other, _ := runJSON(t, kcacheCmd(t, dir, "build", "--json", "--options", "-DFACTOR=3", file))
	if len(other) != 1 || other[0].Outcome != "built" || other[0].Digest == cold[0].Digest {
		t.Errorf("changed options: %+v, want a new build", other)
	}
}

func TestBuildErrorExitsOne(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.cl")
	os.WriteFile(bad, []byte("__kernel void k() { no_such_symbol(); }\n"), 0o644)
	good := writeKernel(t, dir)
	reports, code := runJSON(t, kcacheCmd(t, dir, "build", "--json", "--options", "-DFACTOR=2", bad, good, bad))
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if len(reports) != 3 || !strings.Contains(reports[0].Error, "no_such_symbol") || reports[0].Outcome != "failed" ||
		reports[1].Outcome != "built" || reports[1].Error != "" {
		t.Fatalf("reports %+v", reports)
	}
	// The second request for the broken file gets the kept error: no compile.
	if reports[2].Outcome != "failed" || reports[2].Error != reports[0].Error || reports[2].Digest != reports[0].Digest {
		t.Errorf("kept error: %+v", reports[2])
	}
}

func TestBadInput(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	file := writeKernel(t, dir)
	tests := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"bad size", "KCACHE_MAX_SIZE=lots", []string{"build", file}, "KCACHE_MAX_SIZE"},
		{"no device", "", []string{"build", "--device", "99", file}, "device 99"},
		{"no files", "", []string{"build"}, "requires at least 1 arg"},
		{"missing file", "", []string{"build", "--json", filepath.Join(dir, "nope.cl")}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := kcacheCmd(t, dir, tt.args...)
			if tt.env != "" {
				cmd.Env = append(cmd.Env, tt.env)
			}
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("succeeded: %s", out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("output %q does not mention %q", out, tt.want)
			}
		})
	}
}

// TestConcurrentProcessesBuildOnce starts several processes on a cold cache
// at once, as ranks of a job do: one builds, the others wait for it. The
// processes share a home and set no PoCL directory, with PoCL's cache off:
// the case where PoCL's shared temporary directory makes them abort unless
// kcache gives each its own.
func TestConcurrentProcessesBuildOnce(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	file := writeKernel(t, dir)
	home := t.TempDir()
	sharedPoCL := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "POCL_CACHE_DIR=") })
		cmd.Env = append(cmd.Env, "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
		return cmd
	}
	const procs = 4
	outcomes := make([]string, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() {
			reports, code := runJSON(t, sharedPoCL(kcacheCmd(t, dir, "build", "--json", "--options", "-DFACTOR=5", file)))
			if code != 0 || len(reports) != 1 {
				t.Errorf("process %d: exit %d, %v", i, code, reports)
				return
			}
			outcomes[i] = reports[0].Outcome
		})
	}
	wg.Wait()
	built := 0
	for _, o := range outcomes {
		switch o {
		case "built":
			built++
		case "waited", "disk":
		default:
			t.Errorf("outcome %q", o)
		}
	}
	if built != 1 {
		t.Errorf("outcomes %v: %d builds, want 1", outcomes, built)
	}

	// Different options: every process compiles, all at once.
	for i := range procs {
		wg.Go(func() {
			factor := fmt.Sprintf("-DFACTOR=%d", 10+i)
			reports, code := runJSON(t, sharedPoCL(kcacheCmd(t, dir, "build", "--json", "--options", factor, file)))
			if code != 0 || len(reports) != 1 || reports[0].Outcome != "built" {
				t.Errorf("process %d: exit %d, %+v", i, code, reports)
			}
		})
	}
	wg.Wait()
}

func TestDemoOneCase(t *testing.T) {
	requireOpenCL(t)
	plot := filepath.Join(t.TempDir(), "demo.svg")
	cmd := kcacheCmd(t, t.TempDir(), "demo", "--json", "--case", "transpose-tiled", "--repeat", "2", "--plot", plot)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	var row demo.Row
	if err := json.Unmarshal(out, &row); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if row.Case != "transpose-tiled" || row.Error != "" || row.WarmOut != "disk" || row.ColdMS <= 0 || row.FloorMS <= 0 {
		t.Errorf("row %+v", row)
	}
	svg, err := os.ReadFile(plot)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("plot: %v", err)
	}
	fmt.Fprintln(os.Stderr) // keep the child's progress apart from go test's lines
}

func TestPrivatePoCLDir(t *testing.T) {
	t.Setenv("POCL_KERNEL_CACHE", "0")
	t.Setenv("POCL_CACHE_DIR", "")
	cleanup := privatePoCLDir()
	dir := os.Getenv("POCL_CACHE_DIR")
	if dir == "" || filepath.Dir(dir) != scratchRoot() {
		t.Fatalf("POCL_CACHE_DIR = %q, want a directory under %s", dir, scratchRoot())
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("scratch directory missing: %v", err)
	}
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s", dir)
	}

	// A directory the user chose, or PoCL's own cache on, is left alone.
	t.Setenv("POCL_CACHE_DIR", "/chosen")
	privatePoCLDir()()
	if got := os.Getenv("POCL_CACHE_DIR"); got != "/chosen" {
		t.Errorf("user's POCL_CACHE_DIR replaced by %q", got)
	}
	t.Setenv("POCL_CACHE_DIR", "")
	t.Setenv("POCL_KERNEL_CACHE", "1")
	privatePoCLDir()()
	if got := os.Getenv("POCL_CACHE_DIR"); got != "" {
		t.Errorf("POCL_CACHE_DIR set to %q with PoCL's cache on", got)
	}
}

// TestPoCLCacheKeptOut runs build as a user would, with no PoCL variable
// set: PoCL's own cache stays empty (kcache is the cache), and the
// scratch directory the command gives PoCL is gone when it exits.
func TestPoCLCacheKeptOut(t *testing.T) {
	requireOpenCL(t)
	dir := t.TempDir()
	file := writeKernel(t, dir)
	home, runtime := t.TempDir(), t.TempDir()
	cmd := kcacheCmd(t, dir, "build", "--options", "-DFACTOR=2", file)
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "POCL_") })
	cmd.Env = append(cmd.Env, "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_RUNTIME_DIR="+runtime)
	if r := runCmd(t, cmd); r.code != 0 {
		t.Fatalf("build: exit %d\n%s", r.code, r.stderr)
	}
	filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("PoCL's cache was written: %s", path)
		}
		return nil
	})
	if left, _ := os.ReadDir(runtime); len(left) > 0 {
		t.Errorf("scratch left behind in %s: %v", runtime, left)
	}
}
