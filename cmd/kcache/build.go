package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/opencl"
	"github.com/spf13/cobra"
)

// buildReport is one line of `kcache build --json`. Its field names are a
// public interface: scripts parse them.
type buildReport struct {
	File    string  `json:"file"`
	Outcome string  `json:"outcome"` // built, memory, disk, remote, waited; failed, interrupted
	MS      float64 `json:"ms"`
	Digest  string  `json:"digest"`
	// Stored says the binary is in a persistent tier now, where the next
	// process finds it; NotStored says why not, for a build that worked.
	Stored    bool   `json:"stored"`
	NotStored string `json:"not_stored,omitempty"`
	// Specialized lists the --specialize shapes added to an entry that
	// was cached without them.
	Specialized []string `json:"specialized,omitempty"`
	Error       string   `json:"error,omitempty"` // the build log, on a build error
}

// outcomeInterrupted is the outcome of a file whose build failed after an
// interrupt: the compiler's own signal handler (LLVM's) removes the
// temporary files of a compile under way, so the failure says nothing
// about the file.
const outcomeInterrupted = "interrupted"

// markInterrupted reports a failure that came with an interrupt as one.
func markInterrupted(ctx context.Context, r buildReport) buildReport {
	if r.Error != "" && ctx.Err() != nil {
		r.Outcome = outcomeInterrupted
	}
	return r
}

// outcomeFailed is the outcome of a file that did not build: the compiler
// failed now, or failed earlier in this run and the cache kept the error,
// or the file could not be read.
const outcomeFailed = "failed"

func newBuildCmd() *cobra.Command {
	var (
		includes []string
		depends  []string
		options  string
		device   int
		asJSON   bool
		backend  string
		special  string
	)
	cmd := &cobra.Command{
		Use: "build [-I DIR]... [--depends FILE]... [--options \"...\"] [--device N] [--specialize LIST] [--backend opencl|cuda] [--json] FILE...",
		Example: `  # build a kernel, with headers from include/
  kcache build -I include kernels/gemm.cl

  # the launch shapes your kernels use, compiled into the stored binary
  kcache build --specialize 64-1-1-goffs0-smallgrid kernels/gemm.cl

  # for a script: one JSON object per file
  kcache build --json --options "-DTILE=16" kernels/*.cl | jq -r 'select(.stored | not) | .file'`,
		Short: "Build OpenCL C files through the cache",
		Long: `Build each OpenCL C file through the cache for the selected device and report,
per file, where the binary came from (built, memory, disk, remote, or waited
when another process built it), the time taken and the key digest.
Every --depends FILE enters each file's key, so editing it causes a rebuild;
a directory stands for every file under it (at most 10,000).
The exit status is 1 if any file failed to build, or built but could not be
stored (the reason is on standard error).

Nothing is launched, so on PoCL each binary holds only the generic
work-group functions, and a process that loads it compiles a specialized
one at each kernel's first launch. --specialize names the specializations
to compile into the binaries instead, in PoCL's notation: a comma-separated
list of LOCALX-LOCALY-LOCALZ, each optionally followed by -goffs0 (global
offset zero) and -smallgrid, e.g. "64-1-1-goffs0-smallgrid,16-16-1-goffs0".
A file already cached without some of them is built again with them (and
the shapes its entry had), and its entry replaced: the report lists the
shapes added.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, files []string) error {
			if err := checkSpecializations(special); err != nil {
				return usageError{err}
			}
			opts := strings.TrimSpace(options + includeOptions(includes))
			if err := checkBackend(backend); err != nil {
				return usageError{err}
			}
			in := buildInput{options: opts, depends: depends, specialize: special}
			defer captureStderr()() // before newStreams, which takes os.Stderr
			if backend == "cuda" {
				if special != "" {
					return usagef("--specialize applies to PoCL's OpenCL only, not --backend cuda")
				}
				return runCUDABuild(cmd.Context(), newStreams(cmd), files, in, device, asJSON)
			}
			return runBuild(cmd.Context(), newStreams(cmd), files, in, device, asJSON)
		},
	}
	cmd.Flags().StringArrayVarP(&includes, "include", "I", nil, "add `DIR` to the header search path (repeatable)")
	cmd.Flags().StringArrayVar(&depends, "depends", nil, "declare `FILE` (or every file under a directory) a dependency of every file built (repeatable)")
	cmd.Flags().StringVar(&options, "options", "", "OpenCL build `OPTIONS`, e.g. \"-DN=4 -cl-fast-relaxed-math\"")
	cmd.Flags().IntVar(&device, "device", 0, "index `N` of the OpenCL device, in platform order")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per file per line")
	cmd.Flags().StringVar(&backend, "backend", "opencl", "`opencl` (OpenCL C files) or cuda (CUDA C++ files, through NVRTC)")
	cmd.Flags().StringVar(&special, "specialize", "", "compile the work-group specializations `LIST` into the binaries (PoCL)")
	return cmd
}

// specializeVar is PoCL's setting that compiles work-group functions
// specialized for the listed launch shapes into a program's binary when the
// binary is read. It chooses which functions the binary holds, not how any
// is compiled, so it does not enter the key (keyparts.OpenCLEnv leaves it
// out): a binary built with it serves the processes that run without it.
const specializeVar = "POCL_BINARY_SPECIALIZE_WG"

// specPattern is one specialization in PoCL's notation: the local size,
// then optionally global offset zero and a grid small enough for 32-bit
// indexing.
var specPattern = regexp.MustCompile(`^[0-9]+-[0-9]+-[0-9]+(-goffs0)?(-smallgrid)?$`)

// checkSpecializations rejects a --specialize list PoCL would not parse.
func checkSpecializations(list string) error {
	if list == "" {
		return nil
	}
	for _, s := range strings.Split(list, ",") {
		if !specPattern.MatchString(s) {
			return fmt.Errorf("--specialize: %q is not LOCALX-LOCALY-LOCALZ[-goffs0][-smallgrid]", s)
		}
	}
	return nil
}

// specializeAfterKey opens a session with open while specializeVar is
// unset (so that opening reads no binary with the user's own value), then
// sets it to list (or back to the user's own value) for the binary reads,
// which PoCL makes with the variable as it is then. restore puts the
// process environment back.
func specializeAfterKey(list string, open func() (*session, error)) (sess *session, restore func(), err error) {
	old, had := os.LookupEnv(specializeVar)
	restore = func() {
		if had {
			os.Setenv(specializeVar, old)
		} else {
			os.Unsetenv(specializeVar)
		}
	}
	os.Unsetenv(specializeVar)
	sess, err = open()
	switch {
	case err != nil:
		restore()
		return nil, func() {}, err
	case list != "":
		os.Setenv(specializeVar, list)
	case had:
		os.Setenv(specializeVar, old)
	}
	return sess, restore, nil
}

func includeOptions(dirs []string) string {
	var b strings.Builder
	for _, d := range dirs {
		b.WriteString(" -I " + d)
	}
	return b.String()
}

// buildInput is what every file of one kcache build is built with.
type buildInput struct {
	options    string
	depends    []string
	specialize string // --specialize: added to entries cached without it
}

func runBuild(ctx context.Context, ios *streams, files []string, in buildInput, device int, asJSON bool) error {
	// Nothing is launched here, so there is nothing to wait for: store
	// each binary as soon as it is built.
	sess, restore, err := specializeAfterKey(in.specialize, func() (*session, error) { return openSession(device, -1) })
	if err != nil {
		return err
	}
	defer restore()
	defer sess.Close()
	// A file under way when an interrupt comes finishes: see buildFiles.
	builds := context.WithoutCancel(ctx)
	return buildFiles(ctx, ios, files, asJSON, func(f string) buildReport { return buildOne(builds, sess, f, in) })
}

func buildOne(ctx context.Context, sess *session, file string, in buildInput) buildReport {
	source := func(code []byte) opencl.Source { return fileSource(file, code, in) }
	key := func(code []byte) (*kcache.Key, error) { return sess.cache.Key(sess.dev, source(code)) }
	return buildFile(ctx, sess.store, file, func(code []byte) (buildReport, error) {
		p, err := sess.cache.Program(ctx, sess.dev, source(code))
		if err != nil {
			return buildReport{}, err
		}
		defer p.Release()
		r := buildReport{Outcome: p.Outcome.String(), Digest: p.BlobID().String()}
		if in.specialize == "" || p.Outcome == kcache.OutcomeBuilt || p.Outcome == kcache.OutcomeMemory {
			return r, nil
		}
		k, err := key(code)
		if err == nil {
			r.Specialized, err = specializeEntry(ctx, sess, p, k, source(code), in.specialize)
		}
		if err != nil {
			return r, fmt.Errorf("specializing the cached entry: %w", err)
		}
		return r, nil
	}, key)
}

// buildFiles builds each file through one and prints its report, as a
// line of JSON with asJSON. The exit status is 1 if any failed, or built
// without being stored.
func buildFiles(ctx context.Context, ios *streams, files []string, asJSON bool, one func(file string) buildReport) error {
	reports := make([]buildReport, 0, len(files))
	for _, f := range files {
		if ctx.Err() != nil {
			printError(ios.errOut, fmt.Errorf("interrupted after %d of %s", len(reports), plural(len(files), "file")))
			break
		}
		r := markInterrupted(ctx, one(f))
		reports = append(reports, r)
		if err := printReport(ios.out, r, asJSON); err != nil {
			return err
		}
	}
	failed := slices.ContainsFunc(reports, func(r buildReport) bool { return r.Outcome == outcomeFailed })
	if err := notStoredError(reports); err != nil {
		printError(ios.errOut, err)
		failed = true
	}
	switch {
	case ctx.Err() != nil:
		return exitError{exitInterrupted}
	case failed:
		return exitError{exitFailure}
	}
	return nil
}

// notStoredError returns the error that says which files built but were
// not stored, and why, or nil when every file that built was stored.
func notStoredError(reports []buildReport) error {
	var (
		n       int
		reasons []string
	)
	for _, r := range reports {
		if r.Error != "" || r.Stored {
			continue
		}
		n++
		if !slices.Contains(reasons, r.NotStored) {
			reasons = append(reasons, r.NotStored)
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%s built but not stored: %s", plural(n, "file"), strings.Join(reasons, "; "))
}

// buildFile reads file and builds it through build, timed, which returns
// where the binary came from and its digest, then checks that store holds
// the binary. A failure carries the compiler's log where there is one,
// and the key's digest where key can compute it.
func buildFile(ctx context.Context, store *storage, file string, build func(code []byte) (buildReport, error), key func(code []byte) (*kcache.Key, error)) buildReport {
	r := buildReport{File: file, Outcome: outcomeFailed}
	code, err := os.ReadFile(file)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	start := time.Now()
	b, err := build(code)
	r.MS = float64(time.Since(start).Microseconds()) / 1000
	k, kerr := key(code)
	if err != nil {
		r.Error = err.Error()
		if log := compilerLog(err); log != "" {
			r.Error = strings.TrimSpace(log)
		}
		r.Error = namingFile(r.Error, file)
		if kerr == nil {
			r.Digest = k.Digest().String()
		}
		return r
	}
	r.Outcome, r.Digest, r.Specialized = b.Outcome, b.Digest, b.Specialized
	if kerr != nil {
		r.NotStored = fmt.Sprintf("its key cannot be computed again: %v", kerr)
		return r
	}
	r.Stored, r.NotStored = store.stored(ctx, k)
	return r
}

// fileSource is FILE as a compiler given the file would build it: its own
// directory is searched for its includes. The driver is given the text,
// which PoCL compiles from a temporary file elsewhere, so the directory
// goes in as the first -I (PoCL refuses -iquote): a header beside the
// kernel is found, after the working directory (PoCL's own -I.), and the
// key follows it like any other option. A directory whose name the driver
// would split differently (blanks, quotes, backslashes) is left out.
func fileSource(file string, code []byte, in buildInput) opencl.Source {
	opts := in.options
	if dir := filepath.Dir(file); dir != "." && !strings.ContainsAny(dir, " \t\n\"'\\") {
		opts = strings.TrimSpace("-I " + dir + " " + opts)
	}
	return opencl.Source{Code: code, Path: file, Options: opts, Depends: in.depends}
}

// driverTempFile matches the name of the temporary file PoCL compiles a
// program's text from, as its messages name it.
var driverTempFile = regexp.MustCompile(`[^\s:'"]*/tempfile_[A-Za-z0-9]+\.cl`)

// namingFile makes a compiler message name the user's file instead of the
// driver's temporary copy.
func namingFile(msg, file string) string {
	return driverTempFile.ReplaceAllLiteralString(msg, file)
}

// compilerLog returns the compiler's log that err carries, OpenCL's or
// NVRTC's, or "".
func compilerLog(err error) string {
	var be *opencl.BuildError
	if errors.As(err, &be) {
		return be.Log
	}
	var ce *cuda.CompileError
	if errors.As(err, &ce) {
		return ce.Log
	}
	return ""
}

func printReport(out io.Writer, r buildReport, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(out).Encode(r)
	}
	if r.Error != "" {
		_, err := fmt.Fprintf(out, "%s: error (%.1f ms)\n%s\n", r.File, r.MS, indent(r.Error))
		return err
	}
	note := ""
	if len(r.Specialized) > 0 {
		note = "  (specialized " + strings.Join(r.Specialized, ",") + ")"
	}
	if !r.Stored {
		note += "  (not stored)"
	}
	_, err := fmt.Fprintf(out, "%-8s %9.1f ms  %.16s  %s%s\n", r.Outcome, r.MS, r.Digest, r.File, note)
	return err
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
