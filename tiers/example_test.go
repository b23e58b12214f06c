package tiers_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/tiers"
)

// ExampleFromEnv opens the tiers the KCACHE_* environment configures (with
// KCACHE_REMOTE set, the fleet's Redis below the machine's disk) and
// closes them before the process exits.
func ExampleFromEnv() {
	cache, err := tiers.FromEnv(slog.Default())
	if err != nil {
		log.Fatal(err)
	}
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
	fmt.Println(r.Outcome)
}
