package kcache_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// Example builds one binary through a persistent tier, then finds it there
// from a second Cache, as a second process would.
func Example() {
	dir, err := os.MkdirTemp("", "kcache-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := kcache.DefaultConfig(os.Getenv)
	cfg.Dir = dir

	open := func() *kcache.Cache {
		st, err := disk.Open(disk.FromConfig(cfg))
		if err != nil {
			log.Fatal(err)
		}
		return kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	}
	key := &kcache.Key{
		Device:  kcache.Device{Platform: "Example", Name: "device-0", Version: "1.0", Driver: "1.0"},
		Image:   kcache.Image{Format: "ptx", Source: []byte(".version 8.0 ...")},
		Options: kcache.BuildOptions{Compile: "-O3"},
	}
	compile := func(context.Context) ([]byte, error) { return []byte("device binary"), nil }

	for range 2 {
		r, err := open().GetOrBuild(context.Background(), key, compile)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s\n", r.Outcome, r.Binary)
	}
	// Output:
	// built: device binary
	// disk: device binary
}

// ExampleLoadConfig reads the KCACHE_* environment and overrides one
// setting in code.
func ExampleLoadConfig() {
	os.Setenv("KCACHE_MAX_SIZE", "512MiB")
	os.Setenv("KCACHE_THRESHOLD", "36h")
	cfg, err := kcache.LoadConfig(func(c *kcache.Config) { c.InMemoryThreshold = 64 << 20 })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.MaxSize, cfg.AgeThreshold, cfg.InMemoryThreshold)
	// Output: 536870912 36h0m0s 67108864
}
