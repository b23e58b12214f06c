package main

import (
	"errors"
	"time"

	"github.com/kcache/kcache/internal/demo"
	"github.com/spf13/cobra"
)

// The demo's harness is internal/demo; the commands here parse its flags
// and lend it what only the command knows: the device selection and the
// tiers the environment configures.

func newDemoCmd() *cobra.Command {
	var (
		o       demo.Options
		backend string
	)
	cmd := &cobra.Command{
		Use: "demo [--plot FILE] [--json] [--case NAME]... [--repeat N] [--backend opencl|cuda] [--device N] [--keep]",
		Example: `  kcache demo --plot demo.svg
  kcache demo --case transpose-tiled --repeat 5`,
		Short: "Run the kernel suite cold, warm and against PoCL's own cache",
		Long: `Run a suite of OpenCL kernels, each checked against a Go reference, in
separate processes: through kcache with an empty cache (cold), again in a new
process (warm), with PoCL's own kernel cache empty and then warm (the peer),
and from a binary already in memory (the floor). The warm phases run --repeat
times, interleaved, and each kernel keeps its median. Print, per kernel, the
time to the first correct result in each, and the speedups.`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkBackend(backend); err != nil {
				return err
			}
			return demoExit(demo.Run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), demoHost(), o, backend == "cuda"))
		},
	}
	cmd.Flags().StringVar(&o.Plot, "plot", "", "also write the results as a chart to `FILE` (.svg or .png)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print one JSON object per kernel instead of the table")
	cmd.Flags().BoolVar(&o.Keep, "keep", false, "keep the demo's cache directories")
	cmd.Flags().StringArrayVar(&o.Cases, "case", nil, "run only the case `NAME` (repeatable)")
	cmd.Flags().IntVar(&o.Repeat, "repeat", 3, "run the warm phases `N` times each and keep the median")
	cmd.Flags().IntVar(&o.Device, "device", 0, "index `N` of the device: OpenCL devices in platform order, or the CUDA ordinal with --backend cuda")
	cmd.Flags().StringVar(&backend, "backend", "opencl", "`opencl` (the OpenCL suite) or cuda (the CUDA suite on the GPU, against the driver's ComputeCache and CuPy)")
	return cmd
}

func newDemoPhaseCmd() *cobra.Command {
	var mode, include string
	var cases []string
	var device int
	cmd := &cobra.Command{
		Use:    "demo-phase",
		Hidden: true, // run by `kcache demo`, one process per phase
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demo.RunPhase(cmd.Context(), cmd.OutOrStdout(), demoHost(), device, mode, include, cases)
		},
	}
	cmd.Flags().StringVar(&mode, "mode", "cache", "cache or floor")
	cmd.Flags().StringVar(&include, "include", "", "directory holding the suite's headers")
	cmd.Flags().StringArrayVar(&cases, "case", nil, "run only these cases")
	cmd.Flags().IntVar(&device, "device", 0, "index of the OpenCL device")
	return cmd
}

func newCUDADemoPhaseCmd() *cobra.Command {
	var mode, include, images string
	var cases []string
	var device int
	cmd := &cobra.Command{
		Use:    "cuda-demo-phase",
		Hidden: true, // run by `kcache demo --backend cuda`, one process per phase
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demo.RunCUDAPhase(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), demoHost(), device, mode, include, images, cases)
		},
	}
	cmd.Flags().StringVar(&mode, "mode", "cache", "cache, floor or ptx")
	cmd.Flags().StringVar(&include, "include", "", "directory holding the suite's headers")
	cmd.Flags().StringVar(&images, "images", "", "directory of the images: written in cache mode, read in the others")
	cmd.Flags().StringArrayVar(&cases, "case", nil, "run only these cases")
	cmd.Flags().IntVar(&device, "device", 0, "ordinal of the CUDA device")
	return cmd
}

// newDemoPrefilledCmd is a measurement for bench/RESULTS.md: a process
// that starts from a cache filled only by `kcache build`, against the
// floor (demo.RunPrefilled).
func newDemoPrefilledCmd() *cobra.Command {
	var (
		cases  []string
		repeat int
	)
	cmd := &cobra.Command{
		Use:    "demo-prefilled [--case NAME]... [--repeat N]",
		Short:  "Time the suite from a cache filled only by kcache build, against the floor",
		Hidden: true, // a measurement for bench/RESULTS.md
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demoExit(demo.RunPrefilled(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), demoHost(), cases, repeat))
		},
	}
	cmd.Flags().StringArrayVar(&cases, "case", nil, "run only the case `NAME` (repeatable)")
	cmd.Flags().IntVar(&repeat, "repeat", 3, "run the timed phases `N` times each and keep the median")
	return cmd
}

// demoExit turns the demo's report of a failed case, already printed,
// into exit status 1.
func demoExit(err error) error {
	if errors.Is(err, demo.ErrFailed) {
		return exitError{1}
	}
	return err
}

// demoHost lends the demo the command's device selection and sessions.
func demoHost() demo.Host {
	return demo.Host{
		SelectDevice: selectDevice,
		OpenSession: func(n int, commitDelay time.Duration) (*demo.Session, error) {
			s, err := openSession(n, commitDelay)
			if err != nil {
				return nil, err
			}
			passThrough := s.store != nil && s.store.disk == nil && !s.store.remote
			return &demo.Session{Device: s.dev, Context: s.cl, Bins: s.bins, Cache: s.cache, PassThrough: passThrough, Close: s.Close}, nil
		},
		OpenCUDASession: func(n int) (*demo.CUDASession, error) {
			s, err := openCUDASession(n)
			if err != nil {
				return nil, err
			}
			return &demo.CUDASession{Context: s.ctx, Cache: s.cache, Close: s.Close}, nil
		},
	}
}
