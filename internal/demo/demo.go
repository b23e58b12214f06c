// Package demo is the benchmark harness behind `kcache demo` and its
// hidden phase commands: it runs the kernel suites (suite for OpenCL,
// cudasuite for CUDA) cold, warm, against the drivers' own caches and
// against the floor, each phase a process of its own, and reports the
// times as tables, JSON lines and charts.
//
// It is a client of the library, as a user's program is: it must not know
// how the command reads its configuration or opens the cache's tiers (the
// command lends it sessions through Host), and no library package may
// import it. Its phase processes are the kcache binary itself, re-run with
// the hidden subcommands demo-phase and cuda-demo-phase, and `kcache build`
// for the prefilled demo.
package demo

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/opencl"
)

// ErrFailed is returned, after the report is printed, when a case failed
// (a wrong result, an error): the command exits with status 1.
var ErrFailed = errors.New("demo: a case failed")

// Options are the demo's settings, as `kcache demo` takes them.
type Options struct {
	Repeat int      // runs of each warm phase; each case keeps its median
	Plot   string   // a chart to write (.svg, .png or .pdf), or ""
	JSON   bool     // JSON lines instead of the table
	Keep   bool     // keep the working directory
	Cases  []string // only these cases; all if empty
	Device int      // OpenCL device in platform order, or CUDA ordinal
}

// Host is what the demo borrows from the command that runs it, which owns
// the configuration and the opening of the tiers.
type Host struct {
	// SelectDevice returns OpenCL device n of every device, in platform
	// order.
	SelectDevice func(n int) (opencl.Device, error)
	// OpenSession opens the tiers the environment configures and a
	// program cache on OpenCL device n (see opencl.CacheOptions for
	// commitDelay).
	OpenSession func(n int, commitDelay time.Duration) (*Session, error)
	// OpenCUDASession opens the tiers the environment configures and a
	// module cache on the primary context of CUDA device n.
	OpenCUDASession func(n int) (*CUDASession, error)
}

// Session is an OpenCL phase's view of the cache a host opened.
type Session struct {
	Device  opencl.Device
	Context *opencl.Context
	Bins    *kcache.Cache
	Cache   *opencl.Cache
	// PassThrough says the environment configures no tier: kcache only
	// passes builds on, and the driver's own cache may serve them.
	PassThrough bool
	// Close commits, flushes and releases what the session holds.
	Close func()
}

// CUDASession is a CUDA phase's view of the cache a host opened.
type CUDASession struct {
	Context *cuda.Context
	Cache   *cuda.Cache
	Close   func()
}

// The demo runs one command per process, so the host and the device it was
// given are the process's: phase processes get the device on their command
// line, as the command's --device flag once set it for every file here.
var (
	host       Host
	demoDevice int
)

func setUp(h Host, device int) {
	host, demoDevice = h, device
}

// Run is `kcache demo`: the OpenCL suite, or the CUDA suite with cuda set.
func Run(ctx context.Context, out, progress io.Writer, h Host, o Options, cuda bool) error {
	setUp(h, o.Device)
	if cuda {
		return runCUDADemo(ctx, out, progress, o)
	}
	return runDemo(ctx, out, progress, o)
}

// RunPhase is `kcache demo-phase`: one phase of the OpenCL demo in this
// process, printing a JSON line per case on out. mode is "cache" or
// "floor"; include is the directory of the suite's headers.
func RunPhase(ctx context.Context, out io.Writer, h Host, device int, mode, include string, cases []string) error {
	setUp(h, device)
	return runPhase(ctx, out, mode, include, cases)
}

// RunCUDAPhase is `kcache cuda-demo-phase`: one phase of the CUDA demo in
// this process. mode is "cache", "floor" or "ptx"; images is the
// directory of the images the cache phase writes and the others read.
func RunCUDAPhase(ctx context.Context, out, progress io.Writer, h Host, device int, mode, include, images string, cases []string) error {
	setUp(h, device)
	return runCUDAPhase(ctx, out, progress, mode, include, images, cases)
}

// RunPrefilled is `kcache demo-prefilled`: the suite from a cache filled
// only by `kcache build`, against the floor, on OpenCL device 0.
func RunPrefilled(ctx context.Context, out, progress io.Writer, h Host, cases []string, repeat int) error {
	setUp(h, 0)
	return runDemoPrefilled(ctx, out, progress, cases, repeat)
}
