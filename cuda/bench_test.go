package cuda

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// BenchmarkWarmLookup measures what a warm start pays on the CPU before
// the driver sees the image: the key (header scan and digests), the disk
// tier's read and verification, and decoding the stored image. It needs
// no GPU.
func BenchmarkWarmLookup(b *testing.B) {
	for _, size := range []int{16 << 10, 800 << 10} {
		b.Run(byteSize(size), func(b *testing.B) {
			dir := b.TempDir()
			inc := filepath.Join(dir, "inc")
			os.MkdirAll(inc, 0o755)
			os.WriteFile(filepath.Join(inc, "common.cuh"), []byte("#pragma once\n#define X 1\n"), 0o644)
			src := Source{Code: []byte("#include \"common.cuh\"\n__global__ void k() {}\n"), Path: "k.cu",
				Options: []string{"-std=c++17", "-I" + inc}, NameExpressions: []string{"k"}}
			c := fakeCache(b, nil)
			cfg, _ := kcache.LoadConfig(func(cf *kcache.Config) { cf.Dir = filepath.Join(dir, "cache"); cf.Persistent = true })
			st, err := disk.Open(disk.FromConfig(cfg))
			if err != nil {
				b.Fatal(err)
			}
			c.bins = kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
			key, err := c.Key(context.Background(), src)
			if err != nil {
				b.Fatal(err)
			}
			im := &image{format: FormatCUBIN, code: make([]byte, size), lowered: map[string]string{"k": "_Z1kv"}}
			if err := c.bins.Put(context.Background(), key, kcache.Entry{Binary: im.encode()}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				key, err := c.Key(context.Background(), src)
				if err != nil {
					b.Fatal(err)
				}
				r, err := c.bins.Get(context.Background(), key)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := decodeImage(r.Binary); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func byteSize(n int) string { return strconv.Itoa(n>>10) + "KiB" }

// BenchmarkLoadToLaunch compares, side by side in one process, a module
// from kcache's disk tier (the object tier off, so every iteration reads
// the disk tier, computes the key and loads) with the floor (the same CUBIN from
// memory), each to its first completed launch. It skips without a GPU.
func BenchmarkLoadToLaunch(b *testing.B) {
	gpu := requireGPU(b)
	dir := b.TempDir()
	src := Source{Code: []byte(saxpySource), NameExpressions: []string{"scale<float, 3>"}}
	warmup := newTestCache(b, gpu, dir)
	m, err := warmup.Module(context.Background(), src)
	if err != nil {
		b.Fatal(err)
	}
	cubin, lowered := m.Image(), m.LoweredNames()["scale<float, 3>"]
	m.Release()
	p, err := gpu.Alloc(4 << 10)
	if err != nil {
		b.Fatal(err)
	}
	defer gpu.Free(p)
	launch := func(f *Function) {
		if err := f.Launch(nil, Dim(4), Dim(256), 0, p, int32(1024)); err != nil {
			b.Fatal(err)
		}
		if err := gpu.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
	c := newTestCacheMem(b, gpu, dir, false)
	b.Run("kcache-disk", func(b *testing.B) {
		for b.Loop() {
			m, err := c.Module(context.Background(), src)
			if err != nil {
				b.Fatal(err)
			}
			f, err := m.Function("scale<float, 3>")
			if err != nil {
				b.Fatal(err)
			}
			launch(f)
			m.Release()
			if m.Outcome != kcache.OutcomeDisk {
				b.Fatalf("outcome %v, want disk", m.Outcome)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			m, err := gpu.LoadModule(cubin, nil)
			if err != nil {
				b.Fatal(err)
			}
			f, err := m.Function(lowered)
			if err != nil {
				b.Fatal(err)
			}
			launch(f)
			m.Unload()
		}
	})
}
