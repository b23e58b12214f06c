// Command kcache builds device code through kcache's caches and shows what
// the caches hold and what they save.
//
// Usage:
//
//	kcache build [-I DIR]... [--options "..."] [--device N] [--json] FILE...
//	kcache demo [--plot FILE] [--json] [--case NAME]...
//
// The cache is configured by KCACHE_* environment variables; see the README.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a process exit status from a command that has already
// reported its failure (a build error printed per file, say).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	root := &cobra.Command{
		Use:           "kcache",
		Short:         "A JIT kernel cache: build device code once, reuse it everywhere",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newBuildCmd(), newDemoCmd(), newDemoPhaseCmd())
	cleanup := privatePoCLDir()
	err := root.Execute()
	cleanup()
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "kcache:", err)
		os.Exit(2)
	}
}

// privatePoCLDir gives this process a PoCL directory of its own when
// PoCL's kernel cache is off and no directory was chosen: PoCL 3.1 then
// compiles in a temporary directory shared by every process of the user,
// and processes compiling at once abort ("Can't get stat() on
// .../pocl/uncached/..."). It returns a function that removes the
// directory.
func privatePoCLDir() (cleanup func()) {
	if os.Getenv("POCL_KERNEL_CACHE") != "0" || os.Getenv("POCL_CACHE_DIR") != "" {
		return func() {}
	}
	dir, err := os.MkdirTemp("", "kcache-pocl-")
	if err != nil {
		return func() {}
	}
	os.Setenv("POCL_CACHE_DIR", dir)
	return func() { os.RemoveAll(dir) }
}

// logger reports the library's warnings (a tier that fails, a rejected
// binary) on standard error; KCACHE_DEBUG shows debug lines too.
func logger(debug bool) *slog.Logger {
	level := slog.LevelWarn
	if debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
