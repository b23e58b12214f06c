// Package cudasuite is the kernel suite that `kcache demo --backend cuda`
// runs: realistic CUDA C++ programs (tiled GEMM, reductions, scans, a
// sorting network, stencils, softmax and layer normalisation, FFT, a
// histogram, sparse matrix-vector products, convolution, n-body,
// Mandelbrot, Black-Scholes, and a kernel library of realistic size),
// templates instantiated through name expressions and extern "C" kernels
// both, each with deterministic inputs, its launches, and a check of every
// output against a reference computed in Go.
//
// Some programs #include "common.cuh" from disk: write Headers to a
// directory (WriteHeaders) and pass "-I dir" (Options does both).
//
// It is a fixture of the demo and of tests, not part of the library: it
// runs modules through the cuda binding and must not know kcache's cache
// (its keys, tiers or outcomes), so that a case checks the same whatever
// compiled its module.
package cudasuite

import (
	"embed"
	"fmt"
	"slices"

	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/internal/demo/casedata"
)

//go:embed kernels/*.cu kernels/*.cuh
var kernelFS embed.FS

// Buffer is one device buffer: Init is its initial contents (len = Size),
// or nil for one that starts zero-filled.
type Buffer = casedata.Buffer

// Arg is one kernel argument: a buffer (Buffer >= 0, an index into
// Case.Buffers) or a scalar (Buffer < 0; Value is an int32 or float32).
type Arg struct {
	Buffer int
	Value  any
}

// Buf passes Buffers[i].
func Buf(i int) Arg { return Arg{Buffer: i} }

// I32 passes an int.
func I32(v int) Arg { return Arg{Buffer: -1, Value: int32(v)} }

// F32 passes a float.
func F32(v float32) Arg { return Arg{Buffer: -1, Value: v} }

// Launch is one kernel launch.
type Launch struct {
	Kernel string // an extern "C" name or a name expression
	Grid   cuda.Dim3
	Block  cuda.Dim3
	Shared int // bytes of dynamic shared memory
	Args   []Arg
}

// Case is one program of the suite.
type Case struct {
	Name     string
	Category string
	File     string // the source's file name, e.g. "sgemm.cu"
	Source   string
	Options  []string // NVRTC options, without -I and -arch
	// Headers are the files the source includes from disk, name → content.
	Headers         map[string]string
	NameExpressions []string
	Buffers         []Buffer
	Launches        []Launch // in order, on one stream
	// Check compares out[i], the final contents of Buffers[i], with the
	// Go reference and reports the first mismatch.
	Check   func(out [][]byte) error
	prepare func()
}

// PrepareReference computes the Go reference now, so that a timed run's
// check does not pay for it.
func (c Case) PrepareReference() {
	if c.prepare != nil {
		c.prepare()
	}
}

// Verify checks a run's final buffers.
func (c Case) Verify(out [][]byte) error {
	if err := casedata.CheckOutputs(out, c.Buffers); err != nil {
		return fmt.Errorf("cudasuite: %s: %w", c.Name, err)
	}
	return c.Check(out)
}

// WriteHeaders writes c.Headers into dir, which must exist.
func (c Case) WriteHeaders(dir string) error {
	if err := casedata.WriteHeaders(dir, c.Headers); err != nil {
		return fmt.Errorf("cudasuite: %s: %w", c.Name, err)
	}
	return nil
}

// BuildOptions returns c.Options plus "-I includeDir" when the case has
// headers.
func (c Case) BuildOptions(includeDir string) []string {
	opts := slices.Clone(c.Options)
	if len(c.Headers) > 0 {
		opts = append(opts, "-I"+includeDir)
	}
	return opts
}

// Source returns the case as a cuda.Source whose headers are in
// includeDir.
func (c Case) CUDASource(includeDir string) cuda.Source {
	return cuda.Source{Code: []byte(c.Source), Path: c.File, Options: c.BuildOptions(includeDir), NameExpressions: c.NameExpressions}
}

// Kernels returns the distinct kernels the launches use, in order of
// first use.
func (c Case) Kernels() []string {
	names := make([]string, len(c.Launches))
	for i, l := range c.Launches {
		names[i] = l.Kernel
	}
	return casedata.Distinct(names)
}

// All returns the suite in a fixed order with deterministic inputs.
func All() []Case {
	return []Case{
		sgemmCase(), reduceCase(), scanCase(), bitonicCase(), stencil2DCase(), stencil3DCase(),
		softmaxCase(), layernormCase(), fftCase(), histogramCase(), transposeCase(), spmvCase(),
		conv2DCase(), nbodyCase(), mandelbrotCase(), blackScholesCase(), libraryCase(),
	}
}

func source(name string) string {
	return casedata.MustRead(kernelFS, "kernels/"+name)
}

func commonHeaders() map[string]string { return map[string]string{"common.cuh": source("common.cuh")} }
