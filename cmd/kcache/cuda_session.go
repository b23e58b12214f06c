package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/cuda"
)

// checkBackend rejects a --backend value other than the two there are.
func checkBackend(b string) error {
	if b != "opencl" && b != "cuda" {
		return fmt.Errorf("unknown backend %q: want opencl or cuda", b)
	}
	return nil
}

// cudaSession is what a command that compiles CUDA needs: the binary
// tiers the environment configures and a module cache for the primary
// context of the chosen GPU.
type cudaSession struct {
	ctx   *cuda.Context
	bins  *kcache.Cache
	store *storage // where bins stores, to check that it did
	cache *cuda.Cache
	// setup is what opening the session cost: loading the driver and
	// NVRTC, the context, the device's identity.
	setup time.Duration
}

func openCUDASession(device int) (*cudaSession, error) {
	start := time.Now()
	cfg, err := configFromEnv()
	if err != nil {
		return nil, err
	}
	dev, err := cuda.GetDevice(device)
	if err != nil {
		return nil, err
	}
	ctx, err := cuda.PrimaryContext(dev)
	if err != nil {
		return nil, err
	}
	bins, store := openCache(cfg, logger(cfg.Debug || cfg.Trace))
	cache, err := cuda.NewCache(ctx, bins, cuda.CacheOptions{})
	if err != nil {
		ctx.Release()
		return nil, err
	}
	return &cudaSession{ctx: ctx, bins: bins, store: store, cache: cache, setup: time.Since(start)}, nil
}

// Close unloads the modules, sends the remote tier's queued writes,
// merges this process's counters into the cache's and releases the
// context.
func (s *cudaSession) Close() {
	s.cache.Close()
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	if err := s.bins.Close(ctx); err != nil {
		s.bins.Logger().Warn("kcache: closing the cache", "err", err)
	}
	s.ctx.Release()
}
