package demo

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kcache/kcache/internal/demo/suite"
	"github.com/kcache/kcache/opencl"
)

// demoPhase is one process of the demo: how its environment is set, and
// whether it runs through the cache or measures the floor.
type demoPhase struct {
	name string
	mode string
	env  func(dir string) []string
	// warm phases leave what is on disk as they found it, so they can run
	// again; the demo repeats them, interleaved, and keeps the median.
	warm bool
}

// demoPhases run in this order. Every phase is a new process, so nothing
// carries over in memory; they differ only in what is on disk.
//
// The kcache phases run as kcache is meant to be deployed with PoCL: PoCL's
// own kernel cache off (kcache is the persistent cache) and its scratch
// directory, where it unpacks programs loaded from binaries, in memory:
// POCL_CACHE_DIR is left unset, and the phase process gives itself a
// private directory (privatePoCLDir in cmd/kcache). The peer runs PoCL's
// kernel cache as shipped, on disk, in a directory the two peer phases
// share.
var demoPhases = []demoPhase{
	{"cold", modeCache, kcacheEnv, false},
	{"peer-cold", modeCache, peerEnv, false},
	{"warm", modeCache, kcacheEnv, true},
	{"peer", modeCache, peerEnv, true},
	{"floor", modeFloor, kcacheEnv, true},
}

func kcacheEnv(dir string) []string {
	return []string{"KCACHE_DIR=" + filepath.Join(dir, "kcache"), "KCACHE_PERSISTENT=1", "POCL_KERNEL_CACHE=0"}
}

func peerEnv(dir string) []string {
	return []string{"KCACHE_PERSISTENT=0", "POCL_KERNEL_CACHE=1", "POCL_CACHE_DIR=" + filepath.Join(dir, "pocl-peer")}
}

func runDemo(ctx context.Context, out, progress io.Writer, o Options) error {
	if err := opencl.Load(); err != nil {
		return err
	}
	if err := checkCaseNames(o.Cases, func(n string) bool { return len(selectCases([]string{n})) > 0 }); err != nil {
		return err
	}
	dir, cleanup, err := demoDir("kcache-demo-", o.Keep, progress)
	if err != nil {
		return err
	}
	defer cleanup()
	include := filepath.Join(dir, "include")
	if err := writeSuiteHeaders(include); err != nil {
		return err
	}
	results, err := runPhases(ctx, progress, dir, include, o)
	if err != nil {
		return err
	}
	return reportDemo(out, progress, o, demoRows(selectCases(o.Cases), results), writeDemoTable, plotWithCaption)
}

// plotWithCaption draws the demo's chart captioned with its device and
// the date.
func plotWithCaption(file string, rows []demoRow) error {
	name := "unknown"
	if d, err := host.SelectDevice(demoDevice); err == nil {
		name = d.Name()
	}
	return writeDemoPlot(file, rows, demoCaption(name, time.Now()))
}

// runPhases runs every phase as its own process (runRounds).
func runPhases(ctx context.Context, progress io.Writer, dir, include string, o Options) (map[string]map[string]phaseResult, error) {
	return runRounds(demoPhases, o.Repeat, func(ph demoPhase) (map[string]phaseResult, error) {
		return runPhaseProcess(ctx, progress, ph, dir, include, o.Cases)
	})
}

// writeSuiteHeaders puts the headers of every case in dir. The directory
// is shared by all phases: it is part of the build options, and so of the
// key, and must not change between the cold and the warm run.
func writeSuiteHeaders(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range suite.All() {
		if err := c.WriteHeaders(dir); err != nil {
			return err
		}
	}
	return nil
}

// runPhaseProcess runs one phase as a child process of this binary and
// collects its results, showing progress as each case finishes.
func runPhaseProcess(ctx context.Context, progress io.Writer, ph demoPhase, dir, include string, cases []string) (map[string]phaseResult, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"demo-phase", "--mode", ph.mode, "--include", include, "--device", strconv.Itoa(demoDevice)}
	for _, c := range cases {
		args = append(args, "--case", c)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(cleanEnv(os.Environ()), phaseEnv(ph, dir)...)
	return collectPhase[phaseResult](cmd, progress, ph.name, "%-10s %3d  %-22s %9.1f ms  %s\n")
}

// cleanEnv drops the variables the phases set, so the user's own settings
// cannot skew one phase and not another.
func cleanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "KCACHE_") && !strings.HasPrefix(kv, "POCL_KERNEL_CACHE=") && !strings.HasPrefix(kv, "POCL_CACHE_DIR=") {
			out = append(out, kv)
		}
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
