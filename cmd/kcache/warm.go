package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// warmOptions are the flags of `kcache warm`.
type warmOptions struct {
	options    string
	depends    []string
	specialize string
	jobs       int
	device     int
	json       bool
}

func newWarmCmd() *cobra.Command {
	var (
		o        warmOptions
		includes []string
	)
	cmd := &cobra.Command{
		Use: "warm [-I DIR]... [--depends FILE]... [--options \"...\"] [--specialize LIST] [--jobs N] [--device N] [--json] DIR|FILE...",
		Example: `  # pre-warm a CI cache or a container image; exits 1 if anything failed or was not stored
  kcache warm -I include kernels/

  # four builds at a time, as JSON lines
  kcache warm --jobs 4 --json kernels/ > warm.jsonl`,
		Short: "Build every kernel of directories and files into the cache, in parallel",
		Long: `Build every OpenCL C file given, and every .cl file under each directory given,
through the cache for the selected device, --jobs at a time, so that later runs
find them on disk. A progress bar shows on standard error when it is a
terminal and --json is not given. With --json, print one object per file per
line, as kcache build does. The exit status is 1 if any build failed, or built but could not be
stored (the reason is on standard error).
--depends and --specialize work as they do for kcache build: on PoCL,
--specialize compiles the launch shapes your kernels use into the stored
binaries, so that a process loading them compiles nothing.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.jobs < 1 {
				return usagef("--jobs %d: want 1 or more", o.jobs)
			}
			if err := checkSpecializations(o.specialize); err != nil {
				return usageError{err}
			}
			o.options = strings.TrimSpace(o.options + includeOptions(includes))
			defer captureStderr()() // before newStreams, which takes os.Stderr
			return runWarm(cmd.Context(), newStreams(cmd), a, o)
		},
	}
	cmd.Flags().StringArrayVarP(&includes, "include", "I", nil, "add `DIR` to the header search path (repeatable)")
	cmd.Flags().StringVar(&o.options, "options", "", "OpenCL build `OPTIONS` for every file")
	cmd.Flags().StringArrayVar(&o.depends, "depends", nil, "enter `FILE` in every file's key, as a dependency no include names (repeatable)")
	cmd.Flags().StringVar(&o.specialize, "specialize", "", "compile the work-group specializations `LIST` into the binaries (PoCL)")
	cmd.Flags().IntVar(&o.jobs, "jobs", runtime.GOMAXPROCS(0), "build `N` files at a time")
	cmd.Flags().IntVar(&o.device, "device", 0, "index `N` of the OpenCL device, in platform order")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object per file per line")
	return cmd
}

func runWarm(ctx context.Context, ios *streams, paths []string, o warmOptions) error {
	files, err := kernelFiles(paths)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no .cl files in %s; give OpenCL C files or directories holding them", strings.Join(paths, ", "))
	}
	sess, restore, err := specializeAfterKey(o.specialize, func() (*session, error) { return openSession(o.device, -1) })
	if err != nil {
		return err
	}
	defer restore()
	defer sess.Close()
	in := buildInput{options: o.options, depends: o.depends, specialize: o.specialize}
	bar := newBar(ios.errOut, len(files), !o.json && ios.errTTY)
	reports := make([]buildReport, len(files))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex // serialises output lines
		next = make(chan int)
	)
	// An interrupt stops the dispatch; the builds under way finish, with a
	// context of their own, so that what they built is stored and counted.
	builds := context.WithoutCancel(ctx)
	stopNotice := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if ios.errTTY && !o.json {
			fmt.Fprintln(ios.errOut) // past the progress bar
		}
		fmt.Fprintln(ios.errOut, "kcache: interrupted; finishing the builds under way (interrupt again to stop at once)")
	})
	defer stopNotice()
	for range min(o.jobs, len(files)) {
		wg.Go(func() {
			for i := range next {
				reports[i] = markInterrupted(ctx, buildOne(builds, sess, files[i], in))
				mu.Lock()
				if o.json {
					printReport(ios.out, reports[i], true)
				}
				bar.Add(1)
				mu.Unlock()
			}
		})
	}
	sent := dispatch(ctx, next, len(files))
	wg.Wait()
	bar.Finish()
	err = warmSummary(ios, reports[:sent], len(files), sess.store.where(), o.json)
	if ctx.Err() != nil {
		return exitError{exitInterrupted}
	}
	return err
}

// dispatch sends the indexes 0 to n-1 on next until ctx ends, closes it,
// and returns how many it sent.
func dispatch(ctx context.Context, next chan<- int, n int) int {
	defer close(next)
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			return i
		}
	}
	return n
}

// newBar returns a progress bar on w, or one that draws nothing when
// output is not for a person.
func newBar(w io.Writer, n int, visible bool) *progressbar.ProgressBar {
	return progressbar.NewOptions(n,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetVisibility(visible),
		progressbar.OptionSetDescription("warming"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

// warmSummary prints the failures and a count of outcomes and of the
// binaries stored, and returns the exit status: 1 when a build failed or
// a binary that built was not stored.
func warmSummary(ios *streams, reports []buildReport, of int, where string, asJSON bool) error {
	counts := map[string]int{}
	stored := 0
	for _, r := range reports {
		counts[r.Outcome]++
		if r.Stored {
			stored++
		}
		if r.Error != "" && !asJSON {
			fmt.Fprintf(ios.out, "%s: error\n%s\n", r.File, indent(r.Error))
		}
	}
	var parts []string
	for _, o := range []string{"built", "waited", "disk", "remote", "memory", outcomeFailed, outcomeInterrupted} {
		if counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	kept := "none stored"
	if where != "" {
		kept = fmt.Sprintf("%d stored in %s", stored, where)
	}
	done := plural(len(reports), "file")
	if len(reports) < of {
		done = fmt.Sprintf("%d of %s (interrupted)", len(reports), plural(of, "file"))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing built")
	}
	fmt.Fprintf(ios.errOut, "warmed %s: %s; %s\n", done, strings.Join(parts, ", "), kept)
	failed := counts[outcomeFailed] > 0
	if err := notStoredError(reports); err != nil {
		printError(ios.errOut, err)
		failed = true
	}
	if failed {
		return exitError{exitFailure}
	}
	return nil
}

// kernelFiles expands directories into the .cl files under them, in
// order, and keeps files as given. Only regular files are read (a link to
// one counts): a FIFO named like a kernel would hold the command for ever,
// so one given by name is an error and one found in a directory is left
// out.
func kernelFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w; give OpenCL C files or directories", err)
		}
		if !fi.IsDir() {
			if !fi.Mode().IsRegular() {
				return nil, fmt.Errorf("%s: not a regular file; give OpenCL C files or directories", p)
			}
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err == nil && strings.EqualFold(filepath.Ext(path), ".cl") && regularEntry(path, d) {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return slices.Compact(files), nil
}

// regularEntry reports whether the walked entry d at path is a regular
// file, or a link to one: only a link costs a stat.
func regularEntry(path string, d fs.DirEntry) bool {
	if d.Type()&fs.ModeSymlink == 0 {
		return d.Type().IsRegular()
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
