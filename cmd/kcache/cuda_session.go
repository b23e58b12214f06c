package main

import (
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
	bins := openCache(cfg, logger(cfg.Debug || cfg.Trace))
	cache, err := cuda.NewCache(ctx, bins, cuda.CacheOptions{})
	if err != nil {
		ctx.Release()
		return nil, err
	}
	return &cudaSession{ctx: ctx, bins: bins, cache: cache, setup: time.Since(start)}, nil
}

// Close unloads the modules and releases the context.
func (s *cudaSession) Close() {
	s.cache.Close()
	s.ctx.Release()
}
