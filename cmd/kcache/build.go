package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/opencl"
	"github.com/spf13/cobra"
)

// buildReport is one line of `kcache build --json`. Its field names are a
// public interface: scripts parse them.
type buildReport struct {
	File    string  `json:"file"`
	Outcome string  `json:"outcome"` // built, memory, disk, remote, waited; "" if nothing was attempted
	MS      float64 `json:"ms"`
	Digest  string  `json:"digest"`
	Error   string  `json:"error,omitempty"` // the build log, on a build error
}

func newBuildCmd() *cobra.Command {
	var (
		includes []string
		depends  []string
		options  string
		device   int
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "build [-I DIR]... [--depends FILE]... [--options \"...\"] [--device N] [--json] FILE...",
		Short: "Build OpenCL C files through the cache",
		Long: `Build each OpenCL C file through the cache for the selected device and report,
per file, where the binary came from (built, memory, disk, remote, or waited
when another process built it), the time taken and the key digest.
Every --depends FILE enters each file's key, so editing it causes a rebuild.
The exit status is 1 if any file failed to build.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			opts := strings.TrimSpace(options + includeOptions(includes))
			return runBuild(cmd.Context(), cmd.OutOrStdout(), files, buildInput{options: opts, depends: depends}, device, asJSON)
		},
	}
	cmd.Flags().StringArrayVarP(&includes, "include", "I", nil, "add `DIR` to the header search path (repeatable)")
	cmd.Flags().StringArrayVar(&depends, "depends", nil, "declare `FILE` a dependency of every file built (repeatable)")
	cmd.Flags().StringVar(&options, "options", "", "OpenCL build `OPTIONS`, e.g. \"-DN=4 -cl-fast-relaxed-math\"")
	cmd.Flags().IntVar(&device, "device", 0, "index `N` of the OpenCL device, in platform order")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per file per line")
	return cmd
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
	options string
	depends []string
}

func runBuild(ctx context.Context, out io.Writer, files []string, in buildInput, device int, asJSON bool) error {
	// Nothing is launched here, so there is nothing to wait for: store
	// each binary as soon as it is built.
	sess, err := openSession(device, -1)
	if err != nil {
		return err
	}
	defer sess.Close()
	failed := false
	for _, f := range files {
		r := buildOne(ctx, sess, f, in)
		failed = failed || r.Error != ""
		if err := printReport(out, r, asJSON); err != nil {
			return err
		}
	}
	if failed {
		return exitError{1}
	}
	return nil
}

func buildOne(ctx context.Context, sess *session, file string, in buildInput) buildReport {
	r := buildReport{File: file}
	code, err := os.ReadFile(file)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	failedBefore := sess.bins.Stats().FailedBuilds
	start := time.Now()
	src := opencl.Source{Code: code, Path: file, Options: in.options, Depends: in.depends}
	p, err := sess.cache.Program(ctx, sess.dev, src)
	r.MS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		// A build error is kept in memory: the same file again in this
		// run reports it without compiling.
		r.Outcome = kcache.OutcomeMemory.String()
		if sess.bins.Stats().FailedBuilds > failedBefore {
			r.Outcome = kcache.OutcomeBuilt.String()
		}
		var be *opencl.BuildError
		if errors.As(err, &be) && be.Log != "" {
			r.Error = strings.TrimSpace(be.Log)
		} else {
			r.Error = err.Error()
		}
		if key, kerr := sess.cache.Key(sess.dev, src); kerr == nil {
			r.Digest = key.Digest().String()
		}
		return r
	}
	defer p.Release()
	r.Outcome = p.Outcome.String()
	r.Digest = p.BlobID().String()
	return r
}

func printReport(out io.Writer, r buildReport, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(out).Encode(r)
	}
	if r.Error != "" {
		_, err := fmt.Fprintf(out, "%s: error (%.1f ms)\n%s\n", r.File, r.MS, indent(r.Error))
		return err
	}
	_, err := fmt.Fprintf(out, "%-8s %9.1f ms  %.16s  %s\n", r.Outcome, r.MS, r.Digest, r.File)
	return err
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
