package redis_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/redis"
)

// Example composes a machine's disk tier with the fleet's Redis tier, as
// tiers.Open does from the KCACHE_* environment, and flushes the remote
// tier's queued writes before the process exits.
func Example() {
	cfg, err := kcache.LoadConfig(func(c *kcache.Config) {
		c.Remote = "redis://cache.internal:6379" // usually KCACHE_REMOTE
		c.RemoteSecret = "fleet secret"          // usually KCACHE_REMOTE_SECRET
	})
	if err != nil {
		log.Fatal(err)
	}
	remote, err := redis.Open(redis.FromConfig(cfg))
	if err != nil {
		log.Fatal(err)
	}
	tiers := []kcache.Tier{{Kind: kcache.OutcomeRemote, Store: remote}}
	if st, err := disk.Open(disk.FromConfig(cfg)); err == nil {
		tiers = append([]kcache.Tier{{Kind: kcache.OutcomeDisk, Store: st}}, tiers...)
	}
	cache := kcache.New(cfg, slog.Default(), tiers...)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cache.Close(ctx)
	}()

	key := &kcache.Key{Image: kcache.Image{Format: "ptx", Source: []byte(".version 8.0 ...")}}
	r, err := cache.GetOrBuild(context.Background(), key, func(context.Context) ([]byte, error) {
		return []byte("device binary"), nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Outcome) // built, waited, remote or disk
}
