package main

import (
	"fmt"
	"log/slog"

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
