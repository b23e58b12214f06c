package demo

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcache/kcache/internal/demo/cudasuite"
	"github.com/kcache/kcache/internal/demo/suite"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/NAME.golden, or rewrites the file
// with -update. The files hold the demos' output for fixed results: their
// tables and JSON lines are a public interface, and must not change by
// accident.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if *updateGolden {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, file, got, want)
	}
}

// openCLResults are phase results of two OpenCL cases: the first passes
// everywhere, the second failed its peer phase and has no floor result.
func openCLResults() ([]suite.Case, map[string]map[string]phaseResult) {
	cases := []suite.Case{{Name: "alpha", Category: "dense linear algebra"}, {Name: "beta", Category: "stencil"}}
	r := func(c string, ms float64, outcome, err string) phaseResult {
		return phaseResult{Case: c, Category: "x", Outcome: outcome, MS: ms, CommitMS: 0.5, Error: err}
	}
	return cases, map[string]map[string]phaseResult{
		"cold":      {"alpha": r("alpha", 412.25, "built", ""), "beta": r("beta", 1234.5, "built", "")},
		"peer-cold": {"alpha": r("alpha", 380, "", ""), "beta": r("beta", 900, "", "")},
		"warm":      {"alpha": r("alpha", 3.125, "disk", ""), "beta": r("beta", 7.5, "disk", "")},
		"peer":      {"alpha": r("alpha", 12.5, "", ""), "beta": r("beta", 20, "", "wrong result: x[3] = 1\nmore")},
		"floor":     {"alpha": r("alpha", 2.5, "floor", "")},
	}
}

// cudaResults are phase results of two CUDA cases: the first passes
// everywhere, the second has a wrong result in its warm phase.
func cudaResults() ([]cudasuite.Case, map[string]map[string]cudaResult) {
	cases := []cudasuite.Case{{Name: "alpha", Category: "dense linear algebra"}, {Name: "beta", Category: "scan"}}
	r := func(c string, ms float64, outcome, err string) cudaResult {
		return cudaResult{Case: c, Outcome: outcome, MS: ms, Bytes: 2048 + len(c), Format: "cubin", Error: err}
	}
	return cases, map[string]map[string]cudaResult{
		"cold":         {"alpha": r("alpha", 95.5, "built", ""), "beta": r("beta", 40.25, "built", "")},
		"cc-cold":      {"alpha": r("alpha", 80, "ptx", ""), "beta": r("beta", 30, "ptx", "")},
		"cupy-cold":    {"alpha": r("alpha", 120, "", ""), "beta": r("beta", 60, "", "")},
		"warm":         {"alpha": withModule(r("alpha", 0.125, "disk", ""), 0.1), "beta": r("beta", 0.25, "disk", "wrong result")},
		"computecache": {"alpha": r("alpha", 1.5, "ptx", ""), "beta": r("beta", 0.75, "ptx", "")},
		"cupy":         {"alpha": r("alpha", 4.5, "", ""), "beta": r("beta", 3, "", "")},
		"floor":        {"alpha": withModule(r("alpha", 0.0625, "floor", ""), 0.05), "beta": r("beta", 0.1, "floor", "")},
	}
}

// withModule is r with the part of its time up to the module loaded.
func withModule(r cudaResult, ms float64) cudaResult {
	r.ModuleMS = ms
	return r
}

// TestDemoReport prints the OpenCL demo's table and JSON lines for fixed
// results.
func TestDemoReport(t *testing.T) {
	cases, results := openCLResults()
	rows := demoRows(cases, results)
	var out bytes.Buffer
	if err := writeDemoTable(&out, rows); err != nil {
		t.Fatal(err)
	}
	out.WriteString("--- json\n")
	if err := writeJSONLines(&out, rows); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&out, "--- failed %d\n", countFailed(rows))
	golden(t, "demo-report", out.String())
}

// TestCUDADemoReport prints the CUDA demo's table and JSON lines for fixed
// results, with and without the CuPy phases.
func TestCUDADemoReport(t *testing.T) {
	var out bytes.Buffer
	for _, haveCuPy := range []bool{true, false} {
		cases, results := cudaResults()
		if !haveCuPy {
			delete(results, "cupy-cold")
			delete(results, "cupy")
		}
		rows := cudaDemoRows(cases, results, haveCuPy)
		fmt.Fprintf(&out, "--- CuPy %v\n", haveCuPy)
		if err := writeCUDADemoTable(&out, rows); err != nil {
			t.Fatal(err)
		}
		out.WriteString("--- json\n")
		if err := writeJSONLines(&out, rows); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "--- failed %d\n", countFailed(rows))
	}
	golden(t, "cuda-demo-report", out.String())
}

// TestDemoPrefilledReport prints the prefilled demo's table for fixed
// runs, and its exit status.
func TestDemoPrefilledReport(t *testing.T) {
	cases := []suite.Case{{Name: "alpha"}, {Name: "beta"}}
	runs := map[string]map[string][]phaseResult{
		"build":       {"alpha": {{Case: "alpha", MS: 30}, {Case: "alpha", MS: 10}, {Case: "alpha", MS: 20}}, "beta": {{Case: "beta", MS: 50}}},
		"build-2nd":   {"alpha": {{Case: "alpha", MS: 2}}, "beta": {{Case: "beta", MS: 4, Error: "outcome built, want disk"}}},
		"specialized": {"alpha": {{Case: "alpha", MS: 1.5}}},
		"floor":       {"alpha": {{Case: "alpha", MS: 1}}, "beta": {{Case: "beta", MS: 2}}},
	}
	specs := map[string]string{"alpha": "64-1-1-goffs0", "beta": ""}
	var out bytes.Buffer
	err := writePrefilled(&out, prefilledRows(cases, medians(runs), specs))
	if !errors.Is(err, ErrFailed) {
		t.Errorf("a failed case: %v, want exit status 1", err)
	}
	golden(t, "demo-prefilled-report", out.String())
}

// TestCUDAPhaseCommands records each CUDA phase's command line and
// environment, and what the phases take out of the user's environment.
func TestCUDAPhaseCommands(t *testing.T) {
	var out bytes.Buffer
	o := Options{Cases: []string{"alpha", "beta"}}
	for _, ph := range cudaPhases {
		fmt.Fprintf(&out, "%s warm=%v cupy=%v\n  %s\n  %s\n", ph.name, ph.warm, ph.cupy,
			strings.Join(ph.argv("/bin/kcache", "/d", o), " "), strings.Join(ph.env("/d"), " "))
	}
	env := []string{"HOME=/h", "KCACHE_DIR=/x", "CUDA_CACHE_PATH=/y", "CUDA_CACHE_MAXSIZE=1", "CUDA_VISIBLE_DEVICES=0",
		"CUPY_CACHE_DIR=/z", "CUPY_CACHE_DIR_X=1", "POCL_KERNEL_CACHE=1", "POCL_CACHE_DIR=/p", "PATH=/bin", "KCACHE_DEMO_TRACE=/t"}
	fmt.Fprintf(&out, "clean CUDA: %s\n", strings.Join(cleanCUDAEnv(env), " "))
	fmt.Fprintf(&out, "clean OpenCL: %s\n", strings.Join(cleanEnv(env), " "))
	for _, ph := range demoPhases {
		fmt.Fprintf(&out, "%s mode=%s warm=%v\n  %s\n", ph.name, ph.mode, ph.warm, strings.Join(ph.env("/d"), " "))
	}
	golden(t, "demo-phases", out.String())
}

// TestCUDADemoPlot renders the CUDA chart from fixed results, in every
// format it accepts, and refuses another.
func TestCUDADemoPlot(t *testing.T) {
	cases, results := cudaResults()
	rows := cudaDemoRows(cases, results, true)
	dir := t.TempDir()
	for _, ext := range []string{".png", ".svg", ".pdf"} {
		file := filepath.Join(dir, "cuda"+ext)
		if err := writeCUDADemoPlot(file, rows); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(file); err != nil || fi.Size() < 1000 {
			t.Errorf("%s: %v", file, err)
		}
	}
	if err := writeCUDADemoPlot(filepath.Join(dir, "cuda.txt"), rows); err == nil {
		t.Error("a .txt plot was accepted")
	}
}

// TestRunRounds checks the demos' schedule: the cold phases once, in
// order, then the warm ones interleaved, round after round; each case
// keeps its median run, and a failing phase stops the demo, named.
func TestRunRounds(t *testing.T) {
	phases := []demoPhase{{name: "cold"}, {name: "warm", warm: true}, {name: "peer-cold"}, {name: "floor", warm: true}}
	for _, tc := range []struct {
		repeat  int
		order   string
		failAt  int
		wantErr string
	}{
		{repeat: 3, order: "cold peer-cold warm floor warm floor warm floor"},
		{repeat: 0, order: "cold peer-cold warm floor"},
		{repeat: 2, order: "cold peer-cold warm", failAt: 3, wantErr: "phase warm: broken"},
	} {
		var order []string
		results, err := runRounds(phases, tc.repeat, func(ph demoPhase) (map[string]phaseResult, error) {
			order = append(order, ph.name)
			if len(order) == tc.failAt {
				return nil, errors.New("broken")
			}
			return map[string]phaseResult{"k": {Case: "k", MS: float64(len(order))}}, nil
		})
		if got := strings.Join(order, " "); got != tc.order {
			t.Errorf("repeat %d: ran %s, want %s", tc.repeat, got, tc.order)
		}
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("repeat %d: error %v, want %s", tc.repeat, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// warm ran 3rd, 5th and 7th with repeat 3: its median is the 5th.
		if want := map[int]float64{3: 5, 0: 3}[tc.repeat]; results["warm"]["k"].MS != want {
			t.Errorf("repeat %d: warm median %v, want %v", tc.repeat, results["warm"]["k"].MS, want)
		}
	}
}

// TestDemoDir checks the demo's working directory: removed by cleanup
// unless kept, and a kept one named on progress.
func TestDemoDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, keep := range []bool{false, true} {
		var progress bytes.Buffer
		dir, cleanup, err := demoDir("kcache-demo-", keep, &progress)
		if err != nil {
			t.Fatal(err)
		}
		cleanup()
		_, err = os.Stat(dir)
		if kept := err == nil; kept != keep {
			t.Errorf("keep %v: directory kept %v", keep, kept)
		}
		if said := strings.Contains(progress.String(), "demo: keeping "+dir); said != keep {
			t.Errorf("keep %v: progress %q", keep, progress.String())
		}
	}
}

func TestMedianRun(t *testing.T) {
	runs := []phaseResult{{MS: 9}, {MS: 1}, {MS: 4}}
	if got := medianRun(runs); got.MS != 4 {
		t.Errorf("median of 9, 1, 4 = %v, want 4", got.MS)
	}
	runs = append(runs, phaseResult{MS: 2, Error: "wrong result"})
	if got := medianRun(runs); got.Error == "" {
		t.Error("a failed run must not be hidden by the median")
	}
}
