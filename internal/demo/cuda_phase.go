package demo

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"time"

	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/internal/demo/cudasuite"
)

// cudaResult is one case's result in one phase of the CUDA demo, as a
// phase process reports it on its standard output.
type cudaResult struct {
	Case     string  `json:"case"`
	Category string  `json:"category"`
	Outcome  string  `json:"outcome,omitempty"`
	MS       float64 `json:"ms"` // request to the case's launches completed
	// ModuleMS is the part of MS up to the module loaded (the cache's
	// request, or the floor's file read and load): the rest is the
	// case's launches, which show what the module's way of loading
	// leaves for them.
	ModuleMS float64 `json:"module_ms,omitempty"`
	Bytes    int     `json:"bytes,omitempty"`
	Format   string  `json:"format,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// CUDA phase modes: through kcache's cache; the floor (a CUBIN file read
// and loaded); PTX read and loaded, which the driver JIT-compiles or finds
// in its own cache (ComputeCache), as configured by CUDA_CACHE_PATH.
const (
	cudaModeCache = "cache"
	cudaModeFloor = "floor"
	cudaModePTX   = "ptx"
)

func selectCUDACases(only []string) []cudasuite.Case {
	all := cudasuite.All()
	if len(only) == 0 {
		return all
	}
	return slices.DeleteFunc(all, func(c cudasuite.Case) bool { return !slices.Contains(only, c.Name) })
}

func runCUDAPhase(ctx context.Context, out, progress io.Writer, mode, include, images string, only []string) error {
	var sess *CUDASession
	var cctx *cuda.Context
	start := time.Now()
	if mode == cudaModeCache {
		s, err := host.OpenCUDASession(demoDevice)
		if err != nil {
			return err
		}
		defer s.Close()
		sess, cctx = s, s.Context
	} else {
		dev, err := cuda.GetDevice(demoDevice)
		if err != nil {
			return err
		}
		if cctx, err = cuda.PrimaryContext(dev); err != nil {
			return err
		}
		defer cctx.Release()
	}
	what := "driver, context"
	if sess != nil {
		what += ", NVRTC, device identity"
	}
	fmt.Fprintf(progress, "cuda-demo-phase %s: set-up (%s) %.1f ms\n", mode, what, msSince(start))
	if dir := os.Getenv(phaseTraceEnv); dir != "" {
		stop, err := startPhaseTrace(dir, mode)
		if err != nil {
			return err
		}
		defer stop()
	}
	enc := json.NewEncoder(out)
	var held heldUntilEnd
	defer held.release()
	for _, c := range selectCUDACases(only) {
		c.PrepareReference() // outside the timed region: not what a cache saves
		var r cudaResult
		trace.WithRegion(ctx, c.Name, func() {
			if sess != nil {
				r = runCUDACached(ctx, sess, c, include, images)
			} else {
				r = runCUDAImage(cctx, c, images, mode, &held)
			}
		})
		r.Case, r.Category = c.Name, c.Category
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// phaseTraceEnv names a directory where each CUDA phase process writes an
// execution trace of its cases (go tool trace), one region a case: where a
// warm start's time over its floor goes, goroutine by goroutine.
const phaseTraceEnv = "KCACHE_DEMO_TRACE"

// startPhaseTrace starts the execution trace of a phase in mode, into a
// file of its own in dir, and returns what stops it.
func startPhaseTrace(dir, mode string) (stop func(), err error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.trace", mode, os.Getpid())))
	if err != nil {
		return nil, fmt.Errorf("demo: %s: %w", phaseTraceEnv, err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("demo: %s: %w", phaseTraceEnv, err)
	}
	return func() { trace.Stop(); f.Close() }, nil
}

// runCUDACached times a case from the request for its module to its
// launches completed, through the cache; it then checks the result and,
// when images is set, writes the module's CUBIN and a PTX of the same
// source there for the floor and the ComputeCache phases.
func runCUDACached(ctx context.Context, sess *CUDASession, c cudasuite.Case, include, images string) cudaResult {
	run, err := cudasuite.Prepare(sess.Context, c)
	if err != nil {
		return cudaResult{Error: err.Error()}
	}
	defer run.Free()
	src := c.CUDASource(include)
	start := time.Now()
	region := trace.StartRegion(ctx, "module")
	m, err := sess.Cache.Module(ctx, src)
	region.End()
	if err != nil {
		return cudaResult{Error: err.Error()}
	}
	defer m.Release()
	moduleMS := msSince(start)
	err = run.Launch(m.Function)
	r := cudaResult{Outcome: m.Outcome.String(), MS: msSince(start), ModuleMS: moduleMS, Bytes: len(m.Image()), Format: m.Format()}
	if err == nil {
		err = run.Check()
	}
	if err == nil && images != "" {
		err = writeCaseImages(images, c, src, m)
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// caseNames is what the floor and the PTX phase need besides the image:
// the mangled name of each name expression.
type caseNames map[string]string

// writeCaseImages writes NAME.cubin (the module's code), NAME.ptx (the
// same source compiled by NVRTC for the virtual architecture, as a
// runtime relying on the driver's JIT would ship it) and NAME.names.
func writeCaseImages(dir string, c cudasuite.Case, src cuda.Source, m *cuda.CachedModule) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, c.Name)
	names, _ := json.Marshal(caseNames(m.LoweredNames()))
	if err := os.WriteFile(base+".names", names, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(base+".cubin", m.Image(), 0o644); err != nil {
		return err
	}
	ptx, err := compilePTX(src)
	if err != nil {
		return fmt.Errorf("PTX for the ComputeCache phase: %w", err)
	}
	return os.WriteFile(base+".ptx", ptx, 0o644)
}

func compilePTX(src cuda.Source) ([]byte, error) {
	p, err := cuda.NewProgram(src.Code, src.Path, src.Headers)
	if err != nil {
		return nil, err
	}
	defer p.Destroy()
	for _, e := range src.NameExpressions {
		if err := p.AddNameExpression(e); err != nil {
			return nil, err
		}
	}
	dev, err := cuda.GetDevice(demoDevice)
	if err != nil {
		return nil, err
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return nil, err
	}
	if err := p.Compile(append(slices.Clone(src.Options), fmt.Sprintf("-arch=compute_%d%d", major, minor))); err != nil {
		return nil, err
	}
	return p.PTX()
}

// runCUDAImage times reading an image file (CUBIN or PTX), loading it and
// running the case's launches to completion, then checks the result. The
// module stays loaded until the phase ends, as an application keeps its
// modules and as the cache's object tier keeps them in the cached phases.
func runCUDAImage(ctx *cuda.Context, c cudasuite.Case, dir, mode string, held *heldUntilEnd) cudaResult {
	base := filepath.Join(dir, c.Name)
	ext := map[string]string{cudaModeFloor: ".cubin", cudaModePTX: ".ptx"}[mode]
	var names caseNames
	if b, err := os.ReadFile(base + ".names"); err != nil || json.Unmarshal(b, &names) != nil {
		return cudaResult{Error: fmt.Sprintf("no images of %s in %s: %v", c.Name, dir, err)}
	}
	run, err := cudasuite.Prepare(ctx, c)
	if err != nil {
		return cudaResult{Error: err.Error()}
	}
	defer run.Free()
	start := time.Now()
	region := trace.StartRegion(context.Background(), "module")
	img, err := os.ReadFile(base + ext)
	if err != nil {
		region.End()
		return cudaResult{Error: err.Error()}
	}
	m, err := ctx.LoadModule(img, nil)
	region.End()
	if err != nil {
		return cudaResult{Error: err.Error()}
	}
	held.add(func() { m.Unload() })
	moduleMS := msSince(start)
	funcs := map[string]*cuda.Function{}
	err = run.Launch(func(name string) (*cuda.Function, error) {
		if f, ok := funcs[name]; ok {
			return f, nil
		}
		f, err := m.Function(cmp.Or(names[name], name))
		funcs[name] = f
		return f, err
	})
	r := cudaResult{Outcome: mode, MS: msSince(start), ModuleMS: moduleMS, Bytes: len(img), Format: ext[1:]}
	if err == nil {
		err = run.Check()
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}
