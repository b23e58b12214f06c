package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/internal/keyparts"
	"github.com/kcache/kcache/internal/layerstore"
	"github.com/kcache/kcache/opencl"
	"github.com/spf13/cobra"
)

// newLayerWorkerCmd returns the hidden command the OpenCL layer starts to
// store, out of the application's process, the programs it built on PoCL
// (internal/layerstore's build orders; docs/layer.md). Without flags it
// drains the queue of the cache (KCACHE_DIR), one process per order, at
// the lowest priority, and exits when the queue is empty or another worker
// holds the queue's lock. --wait waits until the queue is empty and no
// worker runs (benchmarks and tests wait so for a cold run's stores).
func newLayerWorkerCmd() *cobra.Command {
	var (
		orderPath string
		wait      time.Duration
	)
	cmd := &cobra.Command{
		Use:    "layer-worker",
		Short:  "Store the programs the OpenCL layer left to it (the layer starts it)",
		Hidden: true, // started by libkcache-layer.so
		Args:   args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kcache.LoadConfig()
			if err != nil {
				return usageError{err}
			}
			if cfg.Dir == "" {
				return usagef("layer-worker: no cache directory (set %s)", kcache.EnvDir)
			}
			q := layerstore.NewQueue(cfg.Dir)
			ctx := cmd.Context()
			switch {
			case wait > 0:
				ctx, cancel := context.WithTimeout(ctx, wait)
				defer cancel()
				return q.Wait(ctx)
			case orderPath != "":
				return buildOrder(ctx, cfg, q, orderPath, workerLogger(os.Stderr, cfg))
			default:
				return drainOrders(ctx, q, cfg)
			}
		},
	}
	cmd.Flags().StringVar(&orderPath, "order", "", "build and store one order (the draining worker runs one process per order)")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the queue to empty and the worker to finish, then exit")
	return cmd
}

// orderTimeout bounds one order's build: a driver that hangs must not stop
// the queue for good. PoCL builds the largest programs seen here (GEGL's,
// 41 kernels, with their binary read) in under a minute on two loaded cores.
const orderTimeout = 10 * time.Minute

// workerLogMax is the size past which the worker's log is started afresh.
const workerLogMax = 1 << 20

// workerLogger logs the worker's lines to w: one per order, stored or
// dropped and why, with its times; KCACHE_DEBUG adds the library's.
func workerLogger(w io.Writer, cfg kcache.Config) *slog.Logger {
	level := slog.LevelInfo
	if cfg.Debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// openWorkerLog opens the queue's log, worker.log, for the draining worker
// and its order processes: nobody reads their standard error, and the log
// is how a user (or a benchmark) sees what the worker did and how long it
// took. A log that cannot be opened is discarded, and so is one that is a
// symbolic link or a FIFO planted in the queue's directory: the worker
// would append to the file the link names, outside the cache, or wait for
// a reader for ever.
func openWorkerLog(q layerstore.Queue) *os.File {
	path := filepath.Join(q.Dir(), "worker.log")
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	if fi, err := os.Lstat(path); err == nil && fi.Size() > workerLogMax {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if fi, serr := f.Stat(); err == nil && (serr != nil || !fi.Mode().IsRegular()) {
		f.Close()
		err = errors.New("not a regular file")
	}
	if err != nil {
		f, _ = os.Open(os.DevNull)
	}
	return f
}

// drainOrders builds the queued orders while it holds the queue's lock.
// After it lets the lock go it looks at the queue once more: a process that
// wrote an order while this one held the lock started no worker, relying
// on that look.
func drainOrders(ctx context.Context, q layerstore.Queue, cfg kcache.Config) error {
	// A worker started after the queue was drained (by a process that
	// exits after another's worker took its orders) leaves without
	// writing anything: its log and lock files would appear in a cache
	// directory that may be being removed.
	if left, err := q.List(); err != nil || len(left) == 0 {
		return err
	}
	lowerPriority()
	if err := os.MkdirAll(q.Dir(), 0o700); err != nil {
		return err
	}
	logf := openWorkerLog(q)
	defer logf.Close()
	log := workerLogger(logf, cfg)
	tried := map[string]bool{}
	for {
		unlock, ok, err := q.TryLock()
		if err != nil || !ok {
			return err
		}
		drainLocked(ctx, q, logf, log, tried)
		unlock()
		left, err := q.List()
		if err != nil || len(untried(left, tried)) == 0 || ctx.Err() != nil {
			return err
		}
	}
}

// untried returns the paths not tried yet in this run: an order whose
// file could not be removed is not built again and again.
func untried(paths []string, tried map[string]bool) []string {
	var out []string
	for _, p := range paths {
		if !tried[p] {
			out = append(out, p)
		}
	}
	return out
}

// drainLocked builds orders until none is left untried.
func drainLocked(ctx context.Context, q layerstore.Queue, logf *os.File, log *slog.Logger, tried map[string]bool) {
	for ctx.Err() == nil {
		paths, err := q.List()
		if err != nil {
			log.Warn("listing build orders", "err", err)
			return
		}
		paths = untried(paths, tried)
		if len(paths) == 0 {
			return
		}
		for _, p := range paths {
			tried[p] = true
			runOrder(ctx, q, p, logf, log)
			// Built, dropped or failed, the order is done: the next cold
			// run orders it again if it was not stored.
			if err := q.Remove(p); err != nil {
				log.Warn("removing a build order", "err", err)
			}
		}
	}
}

// runOrder builds one order in a process of its own, in the order's
// working directory and environment: a driver that crashes on one program
// loses that order only, and each order's PoCL settings are its own.
func runOrder(ctx context.Context, q layerstore.Queue, path string, logf *os.File, log *slog.Logger) {
	o, err := q.Read(path)
	if err != nil {
		log.Warn("dropped a build order", "order", path, "err", err)
		return
	}
	self, err := os.Executable()
	if err != nil {
		log.Warn("no path to the kcache command", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, orderTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "layer-worker", "--order", path)
	cmd.Dir = o.Dir
	cmd.Env = orderEnv(os.Environ(), o)
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log.Warn("an order's build failed", "key", o.Key, "pid", o.PID, "took", time.Since(start), "err", err)
	}
}

// orderEnv is the environment of an order's process (layerstore.WorkerEnv),
// with PoCL's kernel cache as the application had it: the command turns it
// off unless told (keepPoCLCacheOff), and PoCL's default is on. With it
// off, the application's PoCL directory was its own, and the order's
// process gets its own too (privatePoCLDir), not the application's.
//
// PWD is the order's directory, as a shell sets it on cd: the process
// names its working directory by PWD where PWD leads there (Go's
// os.Getwd, and LLVM's for the debug information of -g), so an
// application in a directory reached through a symbolic link had the
// link's name in its key. The worker's own PWD is its first starter's.
func orderEnv(base []string, o layerstore.Order) []string {
	env := layerstore.WorkerEnv(base, o)
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PWD=") })
	env = append(env, "PWD="+o.Dir)
	cacheOff := false
	set := false
	for _, kv := range o.Env {
		if v, ok := strings.CutPrefix(kv, "POCL_KERNEL_CACHE="); ok {
			set, cacheOff = true, v == "0"
		}
	}
	if !set {
		env = append(env, "POCL_KERNEL_CACHE=1")
	}
	if cacheOff {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "POCL_CACHE_DIR=") })
	}
	return env
}

// lowerPriority gives every thread of the process, and so every process it
// starts, the lowest CPU priority (nice 19): the worker must not slow the
// applications whose builds it stores. On Linux the nice value is per
// thread; threads made later inherit it. Failures are ignored: a worker at
// normal priority still stores correctly.
func lowerPriority() {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		syscall.Setpriority(syscall.PRIO_PROCESS, 0, 19)
		return
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			syscall.Setpriority(syscall.PRIO_PROCESS, tid, 19)
		}
	}
}

// errDropped marks an order the worker did not store, and why.
var errDropped = errors.New("order dropped")

// buildOrder builds the order at path and stores its binary under the key
// of what it built, if that is the order's key. Exactness never depends on
// the order: the key is computed here, from this process's device, driver,
// environment and the files as they are now, before the build and checked
// after it, as the layer computes it.
func buildOrder(ctx context.Context, cfg kcache.Config, q layerstore.Queue, path string, log *slog.Logger) error {
	start := time.Now()
	o, err := q.Read(path)
	if err != nil {
		return err
	}
	err = buildAndStore(ctx, cfg, o, log, start)
	if errors.Is(err, errDropped) {
		log.Info("kcache layer-worker: dropped", "key", o.Key, "pid", o.PID, "reason", err)
		return nil
	}
	return err
}

func buildAndStore(ctx context.Context, cfg kcache.Config, o layerstore.Order, log *slog.Logger, start time.Time) error {
	dev, id, err := orderDevice(o)
	if err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	key, unchanged, err := orderKey(ctx, o, id, cwd, log)
	if err != nil {
		return err
	}
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		return err
	}
	bins := kcache.New(cfg, log, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	defer bins.Close(context.WithoutCancel(ctx))
	if _, err := st.Get(ctx, key); err == nil {
		log.Info("kcache layer-worker: already stored", "key", o.Key)
		return nil
	}
	rec, took, read, err := buildRecord(dev, o)
	if err != nil {
		return err
	}
	if !unchanged() {
		return fmt.Errorf("%w: a file the key was computed from changed during the build, or was too new to trust", errDropped)
	}
	if err := bins.Put(ctx, key, kcache.Entry{Binary: rec.Encode(), BuildTime: took}); err != nil {
		return err
	}
	log.Info("kcache layer-worker: stored", "key", o.Key, "pid", o.PID, "build", took, "read", read, "bytes", len(rec.Binary), "total", time.Since(start))
	return nil
}

// orderDevice finds the device the order was built for: the one whose
// every reported string is the order's.
func orderDevice(o layerstore.Order) (opencl.Device, keyparts.OpenCLDevice, error) {
	if err := opencl.Load(); err != nil {
		return opencl.Device{}, keyparts.OpenCLDevice{}, err
	}
	devs, err := opencl.AllDevices()
	if err != nil {
		return opencl.Device{}, keyparts.OpenCLDevice{}, err
	}
	for _, d := range devs {
		p := d.Platform()
		id := keyparts.OpenCLDevice{
			PlatformName: p.Name(), PlatformVendor: p.Vendor(), PlatformVersion: p.Version(),
			Name: d.Name(), Version: d.Version(), DriverVersion: d.DriverVersion(), OpenCLCVersion: d.OpenCLCVersion(),
		}
		if id == o.Device {
			return d, id, nil
		}
	}
	return opencl.Device{}, keyparts.OpenCLDevice{}, fmt.Errorf("%w: no device %q of %q here", errDropped, o.Device.Name, o.Device.PlatformName)
}

// orderKey computes the key of the order's build here, by the layer's
// rules, and checks it is the order's.
func orderKey(ctx context.Context, o layerstore.Order, id keyparts.OpenCLDevice, cwd string, log *slog.Logger) (*kcache.Key, func() bool, error) {
	dev, comp := id.Identity()
	headers, unchanged, _, err := layerstore.Headers(ctx, deps.NewScanner(log), o.Source, o.Options, cwd, dev.Platform, "", false)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errDropped, err)
	}
	key := layerstore.Key(dev, comp, o.Format, o.Source, headers, o.Options, layerstore.CompilerEnv.Select(os.Environ()))
	if key.Digest() != o.Key {
		return nil, nil, fmt.Errorf("%w: its inputs here (headers, driver, environment) are not the ordering process's", errDropped)
	}
	return key, unchanged, nil
}

// buildRecord builds the order's source for dev and reads its binary.
func buildRecord(dev opencl.Device, o layerstore.Order) (rec layerstore.Record, build, read time.Duration, err error) {
	cl, err := opencl.NewContext(dev)
	if err != nil {
		return rec, 0, 0, err
	}
	defer cl.Release()
	prog, err := cl.ProgramWithSource(string(o.Source))
	if err != nil {
		return rec, 0, 0, err
	}
	defer prog.Release()
	start := time.Now()
	if err := prog.Build([]opencl.Device{dev}, o.Options); err != nil {
		return rec, 0, 0, fmt.Errorf("%w: %w", errDropped, err)
	}
	build = time.Since(start)
	bins, err := prog.Binaries()
	read = time.Since(start) - build
	if err != nil {
		return rec, build, read, err
	}
	if len(bins) != 1 || len(bins[0]) == 0 {
		return rec, build, read, fmt.Errorf("%w: no binary", errDropped)
	}
	// The ordering process's log, not this build's, which names this
	// process's scratch files (Order.Log).
	return layerstore.Record{Log: o.Log, Binary: bins[0]}, build, read, nil
}
