package cuda

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
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

// countingRecords counts the dependency records a scanner loaded.
type countingRecords struct {
	*kcache.Cache
	loaded atomic.Int64
}

func (r *countingRecords) LoadRecord(ctx context.Context, id kcache.Digest) ([]byte, error) {
	rec, err := r.Cache.LoadRecord(ctx, id)
	if err == nil {
		r.loaded.Add(1)
	}
	return rec, err
}

// BenchmarkFirstLookup measures the CPU side of the first request for a
// source in a new process, less what a new process pays only once (code
// and files touched for the first time): a new Cache and Scanner for each
// request, so the scanner loads the source's dependency record from the
// disk tier and checks it by stat, the key is built and prepared anew,
// and the entry is read from the disk tier and decoded. WarmLookup is the
// same request in a process that made it before. It needs no GPU.
func BenchmarkFirstLookup(b *testing.B) {
	dir := b.TempDir()
	inc := filepath.Join(dir, "inc")
	os.MkdirAll(inc, 0o755)
	os.WriteFile(filepath.Join(inc, "common.cuh"), []byte("#pragma once\n#define X 1\n"), 0o644)
	// A record stores only stats that were settled (deps.tooNew): let the
	// header's times age past the window before its first scan.
	time.Sleep(100 * time.Millisecond)
	src := Source{Code: []byte("#include \"common.cuh\"\n__global__ void k() {}\n"), Path: "k.cu",
		Options: []string{"-std=c++17", "-I" + inc}, NameExpressions: []string{"k"}}
	cfg, _ := kcache.LoadConfig(func(cf *kcache.Config) { cf.Dir = filepath.Join(dir, "cache"); cf.Persistent = true })
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		b.Fatal(err)
	}
	bins := kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	records := &countingRecords{Cache: bins}
	newCache := func() *Cache {
		c := fakeCache(b, nil)
		c.bins, c.scanner = bins, deps.NewScanner(nil, deps.WithRecords(records))
		return c
	}
	c := newCache()
	p, err := c.plan(src)
	if err != nil {
		b.Fatal(err)
	}
	key, err := c.key(context.Background(), src, p)
	if err != nil {
		b.Fatal(err)
	}
	im := &image{format: FormatCUBIN, code: make([]byte, 16<<10), lowered: map[string]string{"k": "_Z1kv"}}
	if err := bins.Put(context.Background(), key, kcache.Entry{Binary: im.encode()}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c := newCache()
		b.StartTimer()
		p, err := c.plan(src)
		if err != nil {
			b.Fatal(err)
		}
		prep, err := c.prepared(context.Background(), src, p)
		if err != nil {
			b.Fatal(err)
		}
		r, err := bins.GetLocal(context.Background(), prep)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := decodeImage(r.Binary); err != nil {
			b.Fatal(err)
		}
	}
	if n := records.loaded.Load(); n < int64(b.N) {
		b.Fatalf("%d of %d first lookups loaded the dependency record", n, b.N)
	}
}

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

// BenchmarkFirstLookupCold is FirstLookup with the CPU's caches cold, as
// a new process's request for each of its kernels finds them after the
// work between requests (the CUDA suite fills megabytes of buffers): each
// iteration writes 64 MiB before it times one request of a new Cache.
// "usual" reads the dependency record and the entry and computes the key
// between them; "direct" reads the direct record alone and checks the
// dependency record inside it (direct.go); "direct-ahead" takes that record
// from those a new Cache reads ahead (prefetch.go); "file" reads the same image
// from a file of its own with os.ReadFile, as the floor of the CUDA suite
// does. It needs no GPU.
func BenchmarkFirstLookupCold(b *testing.B) {
	dir := b.TempDir()
	inc := filepath.Join(dir, "inc")
	os.MkdirAll(inc, 0o755)
	os.WriteFile(filepath.Join(inc, "common.cuh"), []byte("#pragma once\n#define X 1\n"), 0o644)
	time.Sleep(100 * time.Millisecond) // past deps' settling window, as FirstLookup
	src := Source{Code: []byte("#include \"common.cuh\"\n" + saxpySource), Path: "k.cu",
		Options: []string{"-std=c++17", "-I" + inc}, NameExpressions: []string{"scale<float, 3>"}}
	cfg, _ := kcache.LoadConfig(func(cf *kcache.Config) { cf.Dir = filepath.Join(dir, "cache"); cf.Persistent = true })
	st, err := disk.Open(disk.FromConfig(cfg))
	if err != nil {
		b.Fatal(err)
	}
	bins := kcache.New(cfg, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	newCache := func() *Cache {
		c := fakeCache(b, nil)
		c.bins, c.scanner = bins, deps.NewScanner(nil, deps.WithRecords(bins))
		return c
	}
	ctx := context.Background()
	blob := (&image{format: FormatCUBIN, code: make([]byte, 12<<10), lowered: map[string]string{"scale<float, 3>": "_Z5scale"}}).encode()
	storeWithDirect(b, newCache(), src, blob)
	file := filepath.Join(dir, "module.cubin")
	os.WriteFile(file, blob, 0o644)
	churn := make([]byte, 64<<20)
	lookups := map[string]func(*Cache){
		"usual": func(c *Cache) {
			p, _ := c.plan(src)
			prep, err := c.prepared(ctx, src, p)
			if err != nil {
				b.Fatal(err)
			}
			r, err := bins.GetLocal(ctx, prep)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := decodeImage(r.Binary); err != nil {
				b.Fatal(err)
			}
		},
		"direct": func(c *Cache) {
			p, _ := c.plan(src)
			_, d, _, confirm, ok := c.lookupDirect(ctx, src, p)
			if !ok || !confirm() {
				b.Fatal("the direct record did not serve")
			}
			if _, err := decodeImage(d.image); err != nil {
				b.Fatal(err)
			}
		},
		"direct-ahead": func(c *Cache) {
			p, _ := c.plan(src)
			_, d, _, confirm, ok := c.lookupDirect(ctx, src, p)
			if !ok || !confirm() {
				b.Fatal("the direct record read ahead did not serve")
			}
			if _, err := decodeImage(d.image); err != nil {
				b.Fatal(err)
			}
		},
		"file": func(*Cache) {
			if _, err := os.ReadFile(file); err != nil {
				b.Fatal(err)
			}
		},
	}
	for _, name := range []string{"usual", "direct", "direct-ahead", "file"} {
		b.Run(name, func(b *testing.B) {
			lookup := lookups[name]
			for b.Loop() {
				b.StopTimer()
				c := newCache()
				c.directBase() // once per process, not per request
				if name == "direct-ahead" {
					c.prefetch(ctx, DefaultPrefetchBytes) // as NewCache begins it
				}
				for i := 0; i < len(churn); i += 64 {
					churn[i]++
				}
				b.StartTimer()
				lookup(c)
			}
		})
	}
}
