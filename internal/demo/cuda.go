package demo

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/internal/demo/cudasuite"
)

//go:embed cuda_peer_cupy.py
var cupyPeerScript []byte

// cudaPhase is one process of the CUDA demo.
type cudaPhase struct {
	name string
	argv func(self, dir string, o Options) []string
	env  func(dir string) []string
	warm bool // repeated, interleaved, median kept
	// cupy phases need python3 with CuPy; the demo leaves them out where
	// there is none.
	cupy bool
}

func cudaPhaseArgs(mode string, images bool) func(self, dir string, o Options) []string {
	return func(self, dir string, o Options) []string {
		args := []string{self, "cuda-demo-phase", "--mode", mode, "--include", filepath.Join(dir, "include"), "--device", strconv.Itoa(demoDevice)}
		if mode != cudaModeCache || images {
			args = append(args, "--images", filepath.Join(dir, "images"))
		}
		for _, c := range o.Cases {
			args = append(args, "--case", c)
		}
		return args
	}
}

func cupyArgs(_ string, dir string, _ Options) []string {
	return []string{"python3", filepath.Join(dir, "cupy_peer.py"), filepath.Join(dir, "cupy.json")}
}

func kcacheCUDAEnv(dir string) []string {
	return []string{"KCACHE_DIR=" + filepath.Join(dir, "kcache"), "KCACHE_PERSISTENT=1"}
}

// computeCacheEnv gives the driver's JIT cache a directory of its own,
// shared by the ComputeCache phases only.
func computeCacheEnv(dir string) []string {
	return []string{"KCACHE_PERSISTENT=0", "CUDA_CACHE_PATH=" + filepath.Join(dir, "nvcache"), "CUDA_CACHE_MAXSIZE=4294967296"}
}

func cupyEnv(dir string) []string {
	return []string{"CUPY_CACHE_DIR=" + filepath.Join(dir, "cupy-cache"), "PYTHONUNBUFFERED=1"}
}

// cudaPhases run in this order: the cold ones once, then the warm ones
// interleaved, --repeat times. Every phase is a new process.
var cudaPhases = []cudaPhase{
	{name: "cold", argv: cudaPhaseArgs(cudaModeCache, true), env: kcacheCUDAEnv},
	{name: "cc-cold", argv: cudaPhaseArgs(cudaModePTX, false), env: computeCacheEnv},
	{name: "cupy-cold", argv: cupyArgs, env: cupyEnv, cupy: true},
	{name: "warm", argv: cudaPhaseArgs(cudaModeCache, false), env: kcacheCUDAEnv, warm: true},
	{name: "computecache", argv: cudaPhaseArgs(cudaModePTX, false), env: computeCacheEnv, warm: true},
	{name: "cupy", argv: cupyArgs, env: cupyEnv, warm: true, cupy: true},
	{name: "floor", argv: cudaPhaseArgs(cudaModeFloor, false), env: kcacheCUDAEnv, warm: true},
}

// runCUDADemo is `kcache demo --backend cuda`.
func runCUDADemo(ctx context.Context, out, progress io.Writer, o Options) error {
	if _, err := cuda.GetDevice(demoDevice); err != nil {
		return err
	}
	if err := cuda.LoadNVRTC(); err != nil {
		return err
	}
	if err := checkCaseNames(o.Cases, func(n string) bool { return len(selectCUDACases([]string{n})) > 0 }); err != nil {
		return err
	}
	cases := selectCUDACases(o.Cases)
	dir, cleanup, err := demoDir("kcache-cuda-demo-", o.Keep, progress)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := writeCUDADemoInputs(dir, cases); err != nil {
		return err
	}
	haveCuPy := exec.Command("python3", "-c", "import cupy").Run() == nil
	if !haveCuPy {
		fmt.Fprintln(progress, "demo: python3 with CuPy not found: no CuPy columns")
	}
	results, err := runCUDAPhases(ctx, progress, dir, o, haveCuPy)
	if err != nil {
		return err
	}
	checkCuPyOutputs(dir, cases, results)
	return reportDemo(out, progress, o, cudaDemoRows(cases, results, haveCuPy), writeCUDADemoTable, writeCUDADemoPlot)
}

// runCUDAPhases runs every phase as its own process (runRounds), the
// CuPy ones only where there is CuPy.
func runCUDAPhases(ctx context.Context, progress io.Writer, dir string, o Options, haveCuPy bool) (map[string]map[string]cudaResult, error) {
	phases := slices.DeleteFunc(slices.Clone(cudaPhases), func(ph cudaPhase) bool { return ph.cupy && !haveCuPy })
	return runRounds(phases, o.Repeat, func(ph cudaPhase) (map[string]cudaResult, error) {
		return runCUDAPhaseProcess(ctx, progress, ph, dir, o)
	})
}

func runCUDAPhaseProcess(ctx context.Context, progress io.Writer, ph cudaPhase, dir string, o Options) (map[string]cudaResult, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv := ph.argv(self, dir, o)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(cleanCUDAEnv(os.Environ()), ph.env(dir)...)
	return collectPhase[cudaResult](cmd, progress, ph.name, "%-12s %3d  %-16s %10.2f ms  %s\n")
}

// cleanCUDAEnv drops the variables the phases set, so the user's own
// settings cannot skew one phase and not another; KCACHE_DEMO_TRACE goes
// to every phase.
func cleanCUDAEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == phaseTraceEnv { // what the phases are asked to trace
			out = append(out, kv)
			continue
		}
		if strings.HasPrefix(name, "KCACHE_") || strings.HasPrefix(name, "CUDA_CACHE_") || name == "CUPY_CACHE_DIR" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// writeCUDADemoInputs writes what the phases share: the suite's headers,
// and for the CuPy peer its script, each case's inputs and a description
// of its launches.
func writeCUDADemoInputs(dir string, cases []cudasuite.Case) error {
	include := filepath.Join(dir, "include")
	if err := os.MkdirAll(include, 0o755); err != nil {
		return err
	}
	for _, c := range cudasuite.All() {
		if err := c.WriteHeaders(include); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cupy_peer.py"), cupyPeerScript, 0o644); err != nil {
		return err
	}
	spec, err := cupySpec(dir, include, cases)
	if err != nil {
		return err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cupy.json"), b, 0o644)
}
