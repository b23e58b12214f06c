package main

import (
	"context"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/deps"
)

// runCUDABuild is `kcache build --backend cuda`: each CUDA C++ file
// compiled through the cache for the selected GPU, reported as the OpenCL
// build reports.
func runCUDABuild(ctx context.Context, ios *streams, files []string, in buildInput, device int, asJSON bool) error {
	sess, err := openCUDASession(device)
	if err != nil {
		return err
	}
	defer sess.Close()
	opts := deps.SplitOptions(in.options)
	builds := context.WithoutCancel(ctx)
	return buildFiles(ctx, ios, files, asJSON, func(f string) buildReport { return buildCUDAOne(builds, sess, f, opts, in.depends) })
}

func buildCUDAOne(ctx context.Context, sess *cudaSession, file string, opts, depends []string) buildReport {
	source := func(code []byte) cuda.Source {
		return cuda.Source{Code: code, Path: file, Options: opts, Depends: depends}
	}
	return buildFile(ctx, sess.store, file, func(code []byte) (buildReport, error) {
		m, err := sess.cache.Module(ctx, source(code))
		if err != nil {
			return buildReport{}, err
		}
		defer m.Release()
		return buildReport{Outcome: m.Outcome.String(), Digest: m.Digest().String()}, nil
	}, func(code []byte) (*kcache.Key, error) { return sess.cache.Key(ctx, source(code)) })
}
