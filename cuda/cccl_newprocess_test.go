package cuda

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// newProcessEnv names the phase a child of TestCCCLNewProcess runs.
const newProcessEnv = "KCACHE_CCCL_PHASE"

// TestCCCLNewProcess measures, on the GPU machine, the first CUB kernel of
// a new process (issue 18): cold (NVRTC through the cache), warm (the disk
// tier, its key from the dependency record of an earlier process), and
// the floor (its CUBIN read from a file, loaded and launched); each in a
// process of its own, after the CUDA context is made. It reports, it does
// not judge: set KCACHE_CCCL_MEASURE=N to run it, N warm and floor rounds,
// interleaved; the figures go to the test log as JSON lines.
func TestCCCLNewProcess(t *testing.T) {
	if os.Getenv(newProcessEnv) != "" {
		cccPhase(t, os.Getenv(newProcessEnv))
		return
	}
	rounds := 0
	fmt.Sscan(os.Getenv("KCACHE_CCCL_MEASURE"), &rounds)
	if rounds == 0 {
		t.Skip("a measurement: set KCACHE_CCCL_MEASURE=N")
	}
	requireGPU(t)
	dir := t.TempDir()
	writeUserHeader(t, dir)
	run := func(phase string) cccResult {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCCCLNewProcess$", "-test.v")
		cmd.Env = append(os.Environ(), newProcessEnv+"="+phase, "KCACHE_CCCL_DIR="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", phase, err, out)
		}
		var r cccResult
		for _, line := range splitLines(out) {
			if json.Unmarshal(line, &r) == nil && r.Phase == phase {
				return r
			}
		}
		t.Fatalf("%s: no result in\n%s", phase, out)
		return r
	}
	t.Logf("%s", mustJSON(run("cold")))
	var warm, floor []float64
	for range rounds {
		w, f := run("warm"), run("floor")
		if w.Outcome != kcache.OutcomeDisk.String() {
			t.Errorf("warm outcome %s, want disk", w.Outcome)
		}
		warm, floor = append(warm, w.MS), append(floor, f.MS)
		t.Logf("%s %s", mustJSON(w), mustJSON(f))
	}
	mw, mf := median(warm), median(floor)
	t.Logf(`{"summary":true,"warm_ms":%.2f,"floor_ms":%.2f,"warm_over_floor":%.2f}`, mw, mf, mw/mf)
}

// cccResult is one phase's figures.
type cccResult struct {
	Phase   string  `json:"phase"`
	Outcome string  `json:"outcome,omitempty"`
	MS      float64 `json:"ms"`     // from the request to the completed launch
	KeyMS   float64 `json:"key_ms"` // the key alone, in a process of its own
}

// cccPhase is a child's side of TestCCCLNewProcess.
func cccPhase(t *testing.T, phase string) {
	gpu := requireGPU(t)
	dir := os.Getenv("KCACHE_CCCL_DIR")
	inc := "/usr/local/cuda/include"
	src := Source{Code: []byte(cubSource), Options: []string{"-I" + inc + "/cccl", "-I" + inc, "-I" + dir, "-std=c++17"}}
	out, err := gpu.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	in, err := gpu.Alloc(128 * 4)
	if err != nil {
		t.Fatal(err)
	}
	launch := func(f *Function) {
		if err := f.Launch(nil, Dim(1), Dim(128), 0, in, out); err != nil {
			t.Fatal(err)
		}
		if err := gpu.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	r := cccResult{Phase: phase}
	start := time.Now()
	switch phase {
	case "floor":
		cubin, err := os.ReadFile(filepath.Join(dir, "k.cubin"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := gpu.LoadModule(cubin, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := m.Function("k")
		if err != nil {
			t.Fatal(err)
		}
		launch(f)
	default:
		c := newTestCache(t, gpu, filepath.Join(dir, "cache"))
		m, err := c.Module(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		f, err := m.Function("k")
		if err != nil {
			t.Fatal(err)
		}
		launch(f)
		r.Outcome = m.Outcome.String()
		if phase == "cold" {
			if err := os.WriteFile(filepath.Join(dir, "k.cubin"), m.Image(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.MS = float64(time.Since(start).Microseconds()) / 1000
	if phase == "warm" {
		// The key alone, in a cache of its own: its record is on disk.
		c := newTestCache(t, gpu, filepath.Join(dir, "cache"))
		k0 := time.Now()
		if _, err := c.Key(context.Background(), src); err != nil {
			t.Fatal(err)
		}
		r.KeyMS = float64(time.Since(k0).Microseconds()) / 1000
	}
	fmt.Println(mustJSON(r))
}

// writeUserHeader writes the header cubSource includes from the user's
// directory, settled before any build reads it.
func writeUserHeader(t *testing.T, dir string) {
	if err := os.WriteFile(filepath.Join(dir, "mine.h"), []byte("#define MINE 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "mine.h"), old, old)
	time.Sleep(2100 * time.Millisecond) // past the too-new window of its ctime
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := slices.Index(b, '\n')
		if i < 0 {
			return append(out, b)
		}
		out, b = append(out, b[:i]), b[i+1:]
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
