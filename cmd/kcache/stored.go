package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/redis"
)

// storage is where a building command's binaries go, so that it can say,
// per file, whether the binary was kept: a build that succeeded is of no
// use to a pre-warming step if nothing was stored.
type storage struct {
	disk   *recordingDisk // nil when there is no disk tier
	remote bool           // a writable remote tier: its writes are queued and sent at Close
	off    string         // why there is no disk tier, when there is none
}

// recordingDisk is the disk tier with each failed write remembered, so
// that the command can give the reason an entry was not stored. Embedding
// keeps every other method (Lock, MergeStats, Close, ...) the cache looks
// for on its tiers.
type recordingDisk struct {
	*disk.Store
	mu     sync.Mutex
	failed map[kcache.Digest]error // protected by mu
}

// Put stores e and remembers why it could not.
func (d *recordingDisk) Put(ctx context.Context, key *kcache.Key, e kcache.Entry) error {
	err := d.Store.Put(ctx, key, e)
	if err != nil {
		d.mu.Lock()
		d.failed[key.Digest()] = err
		d.mu.Unlock()
	}
	return err
}

// putError returns the error the last failed write of key returned.
func (d *recordingDisk) putError(key *kcache.Key) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed[key.Digest()]
}

// openCache opens the binary tiers the configuration asks for (disk, and
// remote when KCACHE_REMOTE is set), as tiers.Open does. A tier that
// cannot be opened is a warning: the builds go on without it, and the
// returned storage says why nothing is stored.
func openCache(cfg kcache.Config, log *slog.Logger) (*kcache.Cache, *storage) {
	st := &storage{}
	var ts []kcache.Tier
	switch d, err := openDiskTier(cfg, log); {
	case err != nil:
		st.off = err.Error()
		if cfg.Persistent {
			log.Warn("kcache: persistent cache unavailable; building without it", "err", err)
		}
	default:
		st.disk = &recordingDisk{Store: d, failed: map[kcache.Digest]error{}}
		ts = append(ts, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st.disk})
	}
	if cfg.Remote != "" {
		opts := redis.FromConfig(cfg)
		opts.Logger = log
		if r, err := redis.Open(opts); err != nil {
			log.Warn("kcache: remote cache unavailable; building without it", "err", err)
		} else {
			ts = append(ts, kcache.Tier{Kind: kcache.OutcomeRemote, Store: r})
			st.remote = !cfg.RemoteReadOnly
		}
	}
	return kcache.New(cfg, log, ts...), st
}

// openDiskTier opens the persistent tier, or says why there is none.
func openDiskTier(cfg kcache.Config, log *slog.Logger) (*disk.Store, error) {
	switch {
	case !cfg.Persistent:
		return nil, errors.New("the persistent tier is off (KCACHE_PERSISTENT=0)")
	case cfg.Dir == "":
		return nil, errors.New("no cache directory: set KCACHE_DIR to an absolute path (or HOME or XDG_CACHE_HOME)")
	}
	opts := disk.FromConfig(cfg)
	opts.Logger = log
	d, err := disk.Open(opts)
	if errors.Is(err, disk.ErrUnsafeDir) {
		return nil, unsafeDirError(err, cfg.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("the cache directory cannot be used: %w", err)
	}
	return d, nil
}

// stored reports whether key's entry is in a persistent tier now, and if
// not, why. The remote tier's writes are queued, so a writable remote tier
// counts as storing.
func (s *storage) stored(ctx context.Context, key *kcache.Key) (bool, string) {
	if s.remote {
		return true, ""
	}
	if s.disk == nil {
		return false, s.off
	}
	if _, err := s.disk.Get(ctx, key); err == nil {
		return true, ""
	}
	if err := s.disk.putError(key); err != nil {
		return false, fmt.Sprintf("writing to %s failed: %v", s.disk.Dir(), err)
	}
	return false, fmt.Sprintf("%s did not keep it: its image is outside KCACHE_MIN_IMAGE_SIZE and KCACHE_MAX_IMAGE_SIZE, "+
		"larger than eviction's target, or the cache is over KCACHE_MAX_SIZE", s.disk.Dir())
}

// where names the place binaries are stored, for the summaries, or ""
// when there is none.
func (s *storage) where() string {
	switch {
	case s.disk != nil && s.remote:
		return s.disk.Dir() + " and the remote tier"
	case s.disk != nil:
		return s.disk.Dir()
	case s.remote:
		return "the remote tier"
	}
	return ""
}
