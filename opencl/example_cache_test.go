package opencl_test

import (
	"context"
	"fmt"
	"os"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/opencl"
)

// ExampleCache builds a program through the cache twice: the first request
// compiles it, the second finds the live program of this context. A new
// process would find it on disk instead.
func ExampleCache() {
	devs, err := opencl.AllDevices()
	if err != nil || len(devs) == 0 {
		fmt.Println("no OpenCL device:", err)
		return
	}
	cl, err := opencl.NewContext(devs[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Release()

	dir, _ := os.MkdirTemp("", "kcache-example-")
	defer os.RemoveAll(dir)
	cfg := kcache.DefaultConfig(os.Getenv)
	cfg.Dir = dir
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		fmt.Println(err)
		return
	}
	cache := opencl.NewCache(cl, kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st}), opencl.CacheOptions{})
	defer cache.Close()

	src := opencl.Source{Code: []byte("__kernel void fill(__global int* v) { v[get_global_id(0)] = VALUE; }"), Options: "-DVALUE=7"}
	for range 2 {
		p, err := cache.Program(context.Background(), devs[0], src)
		if err != nil {
			fmt.Println(err)
			return
		}
		k, err := p.Kernel("fill")
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(p.Outcome, k.Name())
		p.Release()
	}
	// On a machine with OpenCL this prints:
	//   built fill
	//   memory fill
}
