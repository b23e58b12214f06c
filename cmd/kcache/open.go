package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/opencl"
)

// openCache opens the binary tiers the configuration asks for. A
// persistent tier that cannot be opened (no directory, an unsafe one, a
// read-only disk) is a warning: the builds go on without it.
func openCache(cfg kcache.Config, log *slog.Logger) *kcache.Cache {
	var tiers []kcache.Tier
	if cfg.Persistent {
		opts := disk.FromConfig(cfg)
		opts.Logger = log
		switch st, err := disk.Open(opts); {
		case err != nil:
			log.Warn("kcache: persistent cache unavailable; building without it", "err", err)
		default:
			tiers = append(tiers, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
		}
	}
	return kcache.New(cfg, log, tiers...)
}

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
	cache *opencl.Cache
}

// openSession reads the configuration, opens the tiers and a context on
// device n. commitDelay is the program cache's (see opencl.CacheOptions).
func openSession(n int, commitDelay time.Duration) (*session, error) {
	cfg, err := kcache.ConfigFromEnv()
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
	bins := openCache(cfg, logger(cfg.Debug || cfg.Trace))
	cache := opencl.NewCache(cl, bins, opencl.CacheOptions{CommitDelay: commitDelay})
	return &session{dev: dev, cl: cl, bins: bins, cache: cache}, nil
}

// Close commits pending binaries, merges this process's counters into the
// cache's and releases the context.
func (s *session) Close() {
	s.cache.Close()
	if err := s.bins.Close(context.Background()); err != nil {
		s.bins.Logger().Warn("kcache: closing the cache", "err", err)
	}
	s.cl.Release()
}
