package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/deps"
)

// runCUDABuild is `kcache build --backend cuda`: each CUDA C++ file
// compiled through the cache for the selected GPU, reported as the OpenCL
// build reports.
func runCUDABuild(ctx context.Context, out io.Writer, files []string, in buildInput, device int, asJSON bool) error {
	sess, err := openCUDASession(device)
	if err != nil {
		return err
	}
	defer sess.Close()
	opts := deps.SplitOptions(in.options)
	failed := false
	for _, f := range files {
		r := buildCUDAOne(ctx, sess, f, opts, in.depends)
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

func buildCUDAOne(ctx context.Context, sess *cudaSession, file string, opts, depends []string) buildReport {
	r := buildReport{File: file}
	code, err := os.ReadFile(file)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	failedBefore := sess.bins.Stats().FailedBuilds
	src := cuda.Source{Code: code, Path: file, Options: opts, Depends: depends}
	start := time.Now()
	m, err := sess.cache.Module(ctx, src)
	r.MS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		// A compile error is kept in memory: the same file again in this
		// run reports it without compiling.
		r.Outcome = kcache.OutcomeMemory.String()
		if sess.bins.Stats().FailedBuilds > failedBefore {
			r.Outcome = kcache.OutcomeBuilt.String()
		}
		var ce *cuda.CompileError
		if errors.As(err, &ce) && ce.Log != "" {
			r.Error = strings.TrimSpace(ce.Log)
		} else {
			r.Error = err.Error()
		}
		if key, kerr := sess.cache.Key(ctx, src); kerr == nil {
			r.Digest = key.Digest().String()
		}
		return r
	}
	defer m.Release()
	r.Outcome = m.Outcome.String()
	r.Digest = m.Digest().String()
	return r
}
