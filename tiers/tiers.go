// Package tiers is kcache's default set-up: it opens the binary tiers a
// configuration asks for, the machine's disk tier (package disk) and the
// fleet's remote tier (package redis, when KCACHE_REMOTE is set), and
// composes them over a builder with kcache.New.
//
// A tier that cannot be opened is a warning, never an error: the builds go
// on without it.
//
// It is the one package that knows both binary tiers, and it knows no
// backend: within the module it imports the root package, disk and redis.
// The backends take the *kcache.Cache it returns.
package tiers

import (
	"log/slog"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/redis"
)

// Open returns a Cache over the tiers cfg configures: disk, then remote.
// logger may be nil to discard diagnostics. The caller calls the Cache's
// Close before the process exits, so that the remote tier's queued writes
// are sent.
func Open(cfg kcache.Config, logger *slog.Logger) *kcache.Cache {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var tiers []kcache.Tier
	if cfg.Persistent {
		opts := disk.FromConfig(cfg)
		opts.Logger = logger
		if st, err := disk.Open(opts); err != nil {
			logger.Warn("kcache: persistent cache unavailable; building without it", "err", err)
		} else {
			tiers = append(tiers, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
		}
	}
	if cfg.Remote != "" {
		opts := redis.FromConfig(cfg)
		opts.Logger = logger
		if st, err := redis.Open(opts); err != nil {
			logger.Warn("kcache: remote cache unavailable; building without it", "err", err)
		} else {
			tiers = append(tiers, kcache.Tier{Kind: kcache.OutcomeRemote, Store: st})
		}
	}
	return kcache.New(cfg, logger, tiers...)
}

// FromEnv reads the configuration from the environment (kcache.LoadConfig,
// with overrides applied in order) and opens its tiers.
func FromEnv(logger *slog.Logger, overrides ...func(*kcache.Config)) (*kcache.Cache, error) {
	cfg, err := kcache.LoadConfig(overrides...)
	if err != nil {
		return nil, err
	}
	return Open(cfg, logger), nil
}
