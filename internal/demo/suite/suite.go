// Package suite is the kernel suite that `kcache demo` runs: realistic
// OpenCL C programs (dense and sparse linear algebra, stencils, reductions
// and scans, sorting, FFT, image filters and more), each with deterministic
// inputs, the launches that run it, and a check of every output element
// against a reference computed in Go.
//
// A Case is pure data plus its Check. Execute runs one through the project's
// OpenCL binding with kernels supplied by the caller (so a kernel cache can
// supply them); RunUncached builds from source and runs and checks a case in
// one call.
//
// Some programs #include "common.h". Their headers travel with the case in
// Case.Headers: before building, write them to a directory (WriteHeaders)
// and add "-I dir" to the build options (BuildOptions does both parts of the
// option string).
//
// It is a fixture of the demo and of tests, not part of the library: it
// runs programs through the opencl binding and must not know kcache's
// cache (its keys, tiers or outcomes), so that a case checks the same
// whatever built its program.
package suite

import (
	"embed"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/kcache/kcache/internal/demo/casedata"
)

//go:embed kernels/*.cl kernels/*.h
var kernelFS embed.FS

// Buffer is one device buffer: Init is its initial contents (len = Size),
// or nil for a buffer that starts zero-filled, such as an output.
type Buffer = casedata.Buffer

// Arg is one kernel argument: exactly one of Buffer (an index into
// Case.Buffers; -1 if the argument is not a buffer), Scalar (the value's
// little-endian bytes) and Local (bytes of __local memory). Build them with
// BufferArg, I32, U32, F32 and LocalArg.
type Arg struct {
	Buffer int
	Scalar []byte
	Local  int
}

// Launch is one kernel enqueue.
type Launch struct {
	Kernel string
	Global []int
	Local  []int // nil: the runtime chooses
	Args   []Arg
}

// Case is one program of the suite.
type Case struct {
	Name     string // short, unique, kebab-case, e.g. "sgemm-tiled"
	Category string // "dense linear algebra", "stencil", "reduction", ...
	Source   string // OpenCL C source of the whole program (may define several kernels)
	Options  string // build options, e.g. "-DTILE=8 -cl-mad-enable"
	// Headers are the files the source #includes, name → content. They
	// must be reachable through -I when building: see WriteHeaders and
	// BuildOptions. Nil when the source includes nothing.
	Headers  map[string]string
	Buffers  []Buffer
	Launches []Launch // run in order on one in-order queue
	// Check compares out[i], the final contents of Buffers[i], with the
	// reference computed in Go, and reports the first mismatch.
	Check func(out [][]byte) error

	prepare func() // computes every reference Check compares with
}

// PrepareReference computes the case's Go reference now, so that a timed
// run's first Check does not pay for it. References are computed once per
// Case and shared by its copies.
func (c Case) PrepareReference() {
	if c.prepare != nil {
		c.prepare()
	}
}

// Verify checks the final buffer contents of a run; it is c.Check.
func (c Case) Verify(out [][]byte) error {
	if err := casedata.CheckOutputs(out, c.Buffers); err != nil {
		return fmt.Errorf("suite: %s: %w", c.Name, err)
	}
	return c.Check(out)
}

// WriteHeaders writes c.Headers into dir, which must exist. A cache keyed
// on build options should use a stable dir (for example one named after a
// hash of the headers), since the directory's path is part of the options.
func (c Case) WriteHeaders(dir string) error {
	if err := casedata.WriteHeaders(dir, c.Headers); err != nil {
		return fmt.Errorf("suite: %s: %w", c.Name, err)
	}
	return nil
}

// BuildOptions returns c.Options plus "-I includeDir" when the case has
// headers (includeDir being where WriteHeaders put them), or c.Options
// unchanged when it has none. The path must not contain spaces: OpenCL
// splits options on white space and has no portable quoting.
func (c Case) BuildOptions(includeDir string) string {
	if len(c.Headers) == 0 {
		return c.Options
	}
	return strings.TrimSpace(c.Options + " -I " + includeDir)
}

// Kernels returns the distinct kernel names that c's launches use, in order
// of first use.
func (c Case) Kernels() []string {
	names := make([]string, len(c.Launches))
	for i, l := range c.Launches {
		names[i] = l.Kernel
	}
	return casedata.Distinct(names)
}

// BufferArg passes Buffers[i].
func BufferArg(i int) Arg { return Arg{Buffer: i} }

// LocalArg passes n bytes of __local memory.
func LocalArg(n int) Arg { return Arg{Buffer: -1, Local: n} }

// I32 passes an int scalar.
func I32(v int32) Arg {
	return Arg{Buffer: -1, Scalar: binary.LittleEndian.AppendUint32(nil, uint32(v))}
}

// U32 passes a uint scalar.
func U32(v uint32) Arg { return Arg{Buffer: -1, Scalar: binary.LittleEndian.AppendUint32(nil, v)} }

// F32 passes a float scalar.
func F32(v float32) Arg {
	return Arg{Buffer: -1, Scalar: binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))}
}

// All returns the suite, in a fixed order, with deterministic inputs. Each
// call builds fresh inputs; references are computed lazily, on first Check.
func All() []Case {
	specs := specs()
	out := make([]Case, len(specs))
	for i, s := range specs {
		out[i] = s.Case
	}
	return out
}

// source returns an embedded kernel file; a missing one is a programming
// error caught by every test.
func source(name string) string {
	return casedata.MustRead(kernelFS, "kernels/"+name)
}

// commonHeaders is the Headers value of cases that #include "common.h".
func commonHeaders() map[string]string {
	return map[string]string{"common.h": source("common.h")}
}
