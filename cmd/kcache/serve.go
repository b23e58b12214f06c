package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/cuda/compileserver"
	"github.com/spf13/cobra"
)

// serveOptions are the flags of `kcache serve`.
type serveOptions struct {
	idle     time.Duration
	stop     bool
	status   bool
	asJSON   bool
	socket   string
	logFile  string
	heapSize int64
	workers  int
	maxRSS   int64
	worker   bool // this process is one worker of a server's pool
}

// defaultPCHHeapLimit caps NVRTC's PCH heap in the server: the PCH of
// CUB's block and device headers measured 178-192 MB; 1 GiB leaves room
// for a few header sets while bounding what a server holds.
const defaultPCHHeapLimit = 1 << 30

// serveWorkersEnv overrides the default number of worker processes.
const serveWorkersEnv = "KCACHE_SERVE_WORKERS"

// defaultServeWorkers is how many worker processes the server keeps, each
// with its own NVRTC and PCH heap: min(4, cores/2), at least 1. NVRTC
// serialises the compiles that use one process's PCH (measured: 8 new CUB
// kernels through one process with 4 threads ended about 0.4 s apart, no
// faster than 8 clients compiling for themselves), so concurrency needs
// processes; each holds 350-450 MB after its first CUB compile, so four
// bound the server near 2 GB, and half the cores leave the rest to the
// clients' own work.
func defaultServeWorkers() int {
	if n, err := strconv.Atoi(os.Getenv(serveWorkersEnv)); err == nil && n > 0 {
		return n
	}
	return max(1, min(4, runtime.NumCPU()/2))
}

// defaultWorkerMaxRSS replaces a worker whose resident memory passes it
// after a compile: a worker held 350-450 MB with the PCH of CUB's headers;
// 2 GiB means several header sets' PCHs or a leak, and a new process
// gives the memory back.
const defaultWorkerMaxRSS = 2 << 30

// newServeCmd is `kcache serve`: the per-user CUDA compile server.
func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use: "serve [--idle-timeout D] [--workers N] [--worker-max-rss BYTES] [--pch-heap-limit BYTES] [--socket PATH] [--log FILE] | --stop | --status [--json]",
		Example: `  kcache serve --idle-timeout 30m   # run in the foreground
  KCACHE_SERVE=auto ./my-cuda-app     # started on demand by the first cold miss
  kcache serve --status --json
  kcache serve --stop`,
		Short: "Run the CUDA compile server that keeps NVRTC's precompiled headers warm",
		Long: `Run the per-user compile server. A process whose CUDA build misses every tier
of the cache sends the compile to it (where KCACHE_SERVE says so: auto, connect,
or the path of a kcache binary); the server checks every header the key was
computed from, compiles with NVRTC's automatic precompiled headers in one of its
--workers processes (each with its own NVRTC and PCH), and keeps them warm for
the next client. It listens on a socket in $XDG_RUNTIME_DIR (or a
private directory in /tmp), serves only its own user, and exits after the idle
timeout. --stop stops the running server; --status (or --json) shows it.
See docs/serve.md.`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			io := newStreams(cmd)
			switch {
			case o.worker:
				return runServeWorker(cmd.Context(), o)
			case o.stop:
				return runServeStop(cmd.Context(), io, o)
			case o.status || o.asJSON:
				return runServeStatus(cmd.Context(), io, o)
			}
			return runServe(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.idle, "idle-timeout", compileserver.DefaultIdleTimeout, "exit after this long without a request (0: never)")
	f.BoolVar(&o.stop, "stop", false, "stop the running server")
	f.BoolVar(&o.status, "status", false, "show the running server")
	f.BoolVar(&o.asJSON, "json", false, "show the running server as one JSON object (null when none runs)")
	f.IntVar(&o.workers, "workers", defaultServeWorkers(), "worker processes, each with its own NVRTC and precompiled headers (default min(4, cores/2), or $"+serveWorkersEnv+")")
	f.Int64Var(&o.maxRSS, "worker-max-rss", defaultWorkerMaxRSS, "replace a worker whose resident memory passes this many bytes after a compile (0: never)")
	f.BoolVar(&o.worker, "worker", false, "run as one worker of a server (started by the server)")
	f.MarkHidden("worker")
	f.Int64Var(&o.heapSize, "pch-heap-limit", defaultPCHHeapLimit, "largest PCH heap NVRTC may grow to, in bytes")
	f.StringVar(&o.socket, "socket", "", "the socket to listen on, stop or ask (default: the user's, see docs/serve.md)")
	f.StringVar(&o.logFile, "log", "", "append the server's log to this file (default: standard error)")
	return cmd
}

// runServe runs the server in the foreground until it is idle, stopped,
// or interrupted. A server already running is not an error: the caller
// wanted one, and there is one.
func runServe(ctx context.Context, o *serveOptions) error {
	logger, closeLog, err := serveLogger(o.logFile)
	if err != nil {
		return err
	}
	defer closeLog()
	pool, err := servePool(o, logger)
	if err != nil {
		return err
	}
	idle := o.idle
	if idle == 0 {
		idle = -1 // the flag's 0 means never; the library's means its default
	}
	srv, err := compileserver.Listen(compileserver.Options{Socket: o.socket, IdleTimeout: idle,
		Env: cuda.ServeKeyEnv(), Logger: logger}, pool)
	if errors.Is(err, compileserver.ErrRunning) {
		logger.Info("kcache serve: a server is already running")
		return nil
	}
	if err != nil {
		return err
	}
	pool.Start()
	logger.Info("kcache serve: listening", "socket", srv.Socket(), "pid", os.Getpid(), "workers", pool.Size(), "compiler", pool.Identity())
	return srv.Serve(ctx) // closes the pool
}

// servePool is the server's pool of worker processes: this binary run as
// `serve --worker`, its log beside the server's.
func servePool(o *serveOptions, logger *slog.Logger) (*compileserver.Pool, error) {
	if err := cuda.LoadNVRTC(); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("kcache serve: finding this binary for its workers: %w", err)
	}
	args := []string{"serve", "--worker", "--pch-heap-limit", strconv.FormatInt(o.heapSize, 10)}
	if o.logFile != "" {
		args = append(args, "--log", o.logFile)
	}
	return compileserver.NewPool(compileserver.PoolOptions{Size: o.workers, Identity: cuda.ServeIdentity(),
		MaxRSS: o.maxRSS, Stderr: os.Stderr, Cleanup: cuda.RemovePCHFiles, Logger: logger,
		Command: func() *exec.Cmd { return exec.Command(self, args...) }}), nil
}

// runServeWorker is one worker of a server's pool: NVRTC with its PCH,
// compiling what the server sends on descriptor 3 and answering on 4,
// until the server closes the pipe.
func runServeWorker(ctx context.Context, o *serveOptions) error {
	logger, closeLog, err := serveLogger(o.logFile)
	if err != nil {
		return err
	}
	defer closeLog()
	comp, err := cuda.NewServeCompiler(o.heapSize)
	if err != nil {
		return err
	}
	comp.Logger = logger.With("worker", os.Getpid())
	defer comp.Close()
	return compileserver.ServeWorker(ctx, os.NewFile(3, "requests"), os.NewFile(4, "replies"), comp)
}

// serveLogger logs to the file named, or to stderr; with KCACHE_DEBUG
// set, also where each compile's time went.
func serveLogger(path string) (*slog.Logger, func(), error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if debug, _ := strconv.ParseBool(os.Getenv(kcache.EnvDebug)); debug {
		opts.Level = slog.LevelDebug
	}
	if path == "" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return slog.New(slog.NewTextHandler(f, opts)), func() { f.Close() }, nil
}

func runServeStop(ctx context.Context, io *streams, o *serveOptions) error {
	err := (&compileserver.Client{Socket: o.socket}).Stop(ctx)
	if errors.Is(err, compileserver.ErrNoServer) {
		fmt.Fprintln(io.errOut, "kcache: no compile server is running")
		return nil
	}
	return err
}

func runServeStatus(ctx context.Context, io *streams, o *serveOptions) error {
	st := serveStatus(ctx, o.socket)
	if o.asJSON {
		return json.NewEncoder(io.out).Encode(st)
	}
	if st == nil {
		_, err := fmt.Fprintln(io.out, "compile server\tnot running")
		return err
	}
	w := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	printServe(w, st)
	return w.Flush()
}

// serveStatus returns the running server's state, or nil when none
// answers within a short bound (stats must not hang on a stuck server).
func serveStatus(ctx context.Context, socket string) *compileserver.Stats {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := (&compileserver.Client{Socket: socket}).Status(ctx)
	if err != nil {
		return nil
	}
	return st
}

// printServe writes the server's lines of a table.
func printServe(w *tabwriter.Writer, st *compileserver.Stats) {
	fmt.Fprintf(w, "compile server\trunning, pid %d, up %s, exits after %s idle\n", st.PID, st.Uptime.Round(time.Second), st.IdleTimeout)
	fmt.Fprintf(w, "server requests\t%d (%d compiled, %d compile errors, %d stale, %d busy, %d mismatched, %d failed)\n",
		st.Requests, st.Compiled, st.CompileError, st.Stale, st.Busy, st.Mismatch, st.Failed)
	fmt.Fprintf(w, "server PCH\t%d created, %d hits\n", st.PCHCreated, st.PCHHits)
	fmt.Fprintf(w, "server compile time\t%s; peak memory %d MB\n", duration(st.CompileTime), st.MaxRSS>>20)
	for _, wk := range st.Workers {
		fmt.Fprintf(w, "server worker %d\tpid %d, %d compiles, %d MB (peak %d MB)\n", wk.Slot, wk.PID, wk.Compiles, wk.RSS>>20, wk.PeakRSS>>20)
	}
}
