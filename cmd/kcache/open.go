package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/opencl"
)

// selectDevice returns device n of every OpenCL device, in platform order.
func selectDevice(n int) (opencl.Device, error) {
	devs, err := opencl.AllDevices()
	if err != nil {
		return opencl.Device{}, err
	}
	if n < 0 || n >= len(devs) {
		return opencl.Device{}, fmt.Errorf("device %d does not exist: %d OpenCL device(s) found", n, len(devs))
	}
	return devs[n], nil
}

// session is what a command that builds programs needs: the binary tiers
// the environment configures, and a program cache for an OpenCL context on
// the chosen device.
type session struct {
	dev   opencl.Device
	cl    *opencl.Context
	bins  *kcache.Cache
	store *storage // where bins stores, to check that it did
	cache *opencl.Cache
}

// openSession reads the configuration, opens the tiers and a context on
// device n. commitDelay is the program cache's (see opencl.CacheOptions).
func openSession(n int, commitDelay time.Duration) (*session, error) {
	return openSessionWith(n, commitDelay, openCache)
}

// keySession opens a session on device n that only computes keys: it
// has no tiers, so it creates no cache directory (why reads the cache
// through openExisting).
func keySession(n int) (*session, error) {
	return openSessionWith(n, -1, func(cfg kcache.Config, log *slog.Logger) (*kcache.Cache, *storage) {
		return kcache.New(cfg, log), &storage{off: "no tiers"}
	})
}

// openSessionWith is openSession with the binary tiers that open opens.
func openSessionWith(n int, commitDelay time.Duration, open func(kcache.Config, *slog.Logger) (*kcache.Cache, *storage)) (*session, error) {
	cfg, err := configFromEnv()
	if err != nil {
		return nil, err
	}
	dev, err := selectDevice(n)
	if err != nil {
		return nil, err
	}
	cl, err := opencl.NewContext(dev)
	if err != nil {
		return nil, err
	}
	bins, store := open(cfg, logger(cfg.Debug || cfg.Trace))
	cache := opencl.NewCache(cl, bins, opencl.CacheOptions{CommitDelay: commitDelay, PrivateDir: privatePoCL})
	return &session{dev: dev, cl: cl, bins: bins, store: store, cache: cache}, nil
}

// closeWait bounds how long a command waits, as it exits, for the remote
// tier's queued writes: long enough for a few large binaries on a slow
// link, short enough that a hung server does not hang the command.
const closeWait = 5 * time.Second

// Close commits pending binaries, sends the remote tier's queued writes,
// merges this process's counters into the cache's and releases the context.
func (s *session) Close() {
	s.cache.Close()
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	if err := s.bins.Close(ctx); err != nil {
		s.bins.Logger().Warn("kcache: closing the cache", "err", err)
	}
	s.cl.Release()
}
