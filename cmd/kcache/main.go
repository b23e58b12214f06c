// Command kcache builds device code through kcache's caches and shows what
// the caches hold and what they save.
//
// Usage:
//
//	kcache build [-I DIR]... [--options "..."] [--device N] [--specialize LIST] [--json] FILE...
//	kcache demo [--plot FILE] [--json] [--case NAME]...
//
// The cache is configured by KCACHE_* environment variables; see the README.
//
// It holds the commands and nothing the library needs: each command is a
// small file over the library's packages (kcache, disk, redis, deps,
// opencl, cuda, cuda/compileserver), and no package imports this one.
// The demo's harness and kernel suites live in internal/demo, which the
// demo command calls.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// exitError carries a process exit status from a command that has already
// reported its failure (a build error printed per file, say).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	root := newRootCmd()
	keepPoCLCacheOff()
	cleanup := privatePoCLDir()
	ctx, stop := interruptible()
	err := root.ExecuteContext(ctx)
	interrupted := ctx.Err() != nil
	stop()
	cleanup()
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		if interrupted && errors.Is(err, context.Canceled) {
			printError(os.Stderr, errors.New("interrupted"))
			os.Exit(exitInterrupted)
		}
		if strings.HasPrefix(err.Error(), "unknown command") { // cobra's, for the root
			err = usageError{fmt.Errorf("%w; see kcache --help", err)}
		}
		printError(os.Stderr, err)
		os.Exit(exitCode(err))
	}
}

// interruptible returns a context that SIGINT and SIGTERM end, so that a
// command stops early and intact: it reports what it did, merges its
// counters and removes its scratch directory. A second signal ends the
// process at once, as it would without kcache's handling.
func interruptible() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop) // the next signal gets the default action
	return ctx, stop
}

// newRootCmd returns the kcache command with every subcommand.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "kcache",
		Short:         "A JIT kernel cache: build device code once, reuse it everywhere",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("kcache {{.Version}}\n")
	root.AddCommand(newBuildCmd(), newDemoCmd(), newDemoPhaseCmd(), newCUDADemoPhaseCmd(), newDemoPrefilledCmd(), newConfigCmd(), newVersionCmd(), newServeCmd(), newLayerWorkerCmd())
	addCacheCommands(root)
	return root
}

// errorPrefix is how the command names itself on the errors it prints.
const errorPrefix = "kcache: "

// printError prints the error a command failed with. The rule, for every
// error the command prints: it names the command once, at its start. The
// kcache library's errors already begin with "kcache: ", their package
// sharing the command's name, and keep that one prefix; every other error
// (cobra's usage errors, the opencl and disk packages', the command's own)
// gets it here. Errors the library joins (one per bad variable) begin
// every line with the prefix themselves.
func printError(w io.Writer, err error) {
	msg := err.Error()
	if !strings.HasPrefix(msg, errorPrefix) {
		msg = errorPrefix + msg
	}
	fmt.Fprintln(w, msg)
}

// keepPoCLCacheOff turns PoCL's own kernel cache off for kcache's
// commands, unless the user set POCL_KERNEL_CACHE: kcache is the cache.
// Left on, PoCL fills a second cache under ~/.cache/pocl that clear and
// prune do not manage, and its writes distort build times and the time
// saved. The variable does not enter keys (keyparts.OpenCLEnv), and the
// demo sets it for each of its phases.
func keepPoCLCacheOff() {
	_, poclCacheSetByUser = os.LookupEnv("POCL_KERNEL_CACHE")
	if !poclCacheSetByUser {
		os.Setenv("POCL_KERNEL_CACHE", "0")
	}
}

// poclCacheSetByUser records whether POCL_KERNEL_CACHE came from the
// user, for kcache config.
var poclCacheSetByUser bool

// privatePoCLDir gives this process a PoCL directory of its own when
// PoCL's kernel cache is off and no directory was chosen. PoCL then uses
// the directory only as scratch: it unpacks every program it loads from a
// binary there. Two reasons to choose it:
//   - PoCL 3.1's default scratch directory is shared by every process of
//     the user, and processes compiling at once abort ("Can't get stat() on
//     .../pocl/uncached/...");
//   - on a disk, unpacking costs 3 to 12 ms a program (measured on ext4);
//     in memory it costs 0.5 ms, which is most of a warm start.
//
// It returns a function that removes the directory.
func privatePoCLDir() (cleanup func()) {
	if os.Getenv("POCL_KERNEL_CACHE") != "0" || os.Getenv("POCL_CACHE_DIR") != "" {
		return func() {}
	}
	dir, err := os.MkdirTemp(scratchRoot(), "kcache-pocl-")
	if err != nil {
		return func() {}
	}
	os.Setenv("POCL_CACHE_DIR", dir)
	privatePoCL = dir
	return func() { os.RemoveAll(dir) }
}

// privatePoCL is the PoCL directory this process gave itself, "" when it
// gave none: every key's scan names it (PoCL searches it first), so the
// OpenCL cache's dependency records name it by a placeholder
// (opencl.CacheOptions.PrivateDir) and serve later processes, whose
// directories are others.
var privatePoCL string

// scratchRoot returns a memory-backed directory for scratch files where
// there is one ($XDG_RUNTIME_DIR, then /dev/shm), else the temporary
// directory.
func scratchRoot() string {
	for _, dir := range []string{os.Getenv("XDG_RUNTIME_DIR"), "/dev/shm"} {
		if dir == "" {
			continue
		}
		if f, err := os.CreateTemp(dir, ".kcache-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return dir
		}
	}
	return os.TempDir()
}

// logger reports the library's warnings (a tier that fails, a rejected
// binary) on standard error; KCACHE_DEBUG and KCACHE_TRACE show their
// debug lines too.
func logger(debug bool) *slog.Logger {
	level := slog.LevelWarn
	if debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
