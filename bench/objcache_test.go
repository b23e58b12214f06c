package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kcache/kcache/objcache"
	"github.com/maypok86/otter/v2"
)

// numKeys is the key set every contender is measured on: about the kernels
// of a mid-sized SYCL application, and more than fit in L1 as map entries,
// so that hits miss the CPU cache as they would in a real run.
const numKeys = 1024

// kernelKey is the spec's kernels-map key: the program the kernel belongs
// to, and the kernel's (mangled) name.
type kernelKey struct {
	program uintptr
	name    string
}

// kernel stands for a runtime kernel handle.
type kernel struct{ id int }

func kernelName(i int) string { return fmt.Sprintf("_ZTSZ4mainEUlN4sycl2idILi1EEEE_%04d", i) }

func stringKeys() []string {
	keys := make([]string, numKeys)
	for i := range keys {
		keys[i] = kernelName(i)
	}
	return keys
}

func structKeys() []kernelKey {
	keys := make([]kernelKey, numKeys)
	for i := range keys {
		keys[i] = kernelKey{program: 0x7f00_0000_0000 + uintptr(i%16)*0x1000, name: kernelName(i)}
	}
	return keys
}

// lookup is one contender's hit: it must find keys[i] and use its value.
type lookup[K comparable] func(key K) *kernel

// contender is one cache's hit function, named for benchstat's /cache key.
type contender[K comparable] struct {
	name string
	hit  lookup[K]
}

// contenders returns, for the same key set, a hit function per cache. The
// bounded caches are sized to the key set, as a bounded cache is in steady
// state: objcache with a byte threshold of one byte per entry, so that hits
// keep recency for eviction, and otter with MaximumSize = numKeys, so that
// hits go through its read buffer. otter.Get-4x has room for four times the
// keys: below half full otter skips its read buffer (its frequency sketch is
// not started yet), which shows what recency bookkeeping costs it.
func contenders[K comparable](b *testing.B, keys []K) []contender[K] {
	ctx := context.Background()
	objs := objcache.New[K, *kernel](objcache.Options[*kernel]{Threshold: numKeys})
	var sm sync.Map
	ot := otter.Must(&otter.Options[K, *kernel]{MaximumSize: numKeys})
	roomy := otter.Must(&otter.Options[K, *kernel]{MaximumSize: 4 * numKeys})
	for i, k := range keys {
		v := &kernel{id: i}
		h, err := objs.GetOrBuild(ctx, k, func(context.Context) (*kernel, int64, error) { return v, 1, nil })
		if err != nil {
			b.Fatal(err)
		}
		h.Release()
		sm.Store(k, v)
		ot.Set(k, v)
		roomy.Set(k, v)
	}
	if objs.Len() != numKeys || ot.EstimatedSize() != numKeys {
		b.Fatalf("objcache holds %d keys, otter %d; want %d", objs.Len(), ot.EstimatedSize(), numKeys)
	}
	miss := func(context.Context) (*kernel, int64, error) { panic("miss") }
	otterMiss := otter.LoaderFunc[K, *kernel](func(context.Context, K) (*kernel, error) { panic("miss") })
	return []contender[K]{
		{"objcache.GetOrBuild", func(k K) *kernel {
			h, _ := objs.GetOrBuild(ctx, k, miss)
			v := h.Value()
			h.Release()
			return v
		}},
		{"objcache.Get", func(k K) *kernel {
			h, _ := objs.Get(k)
			v := h.Value()
			h.Release()
			return v
		}},
		{"otter.Get", func(k K) *kernel { v, _ := ot.Get(ctx, k, otterMiss); return v }},
		{"otter.GetIfPresent", func(k K) *kernel { v, _ := ot.GetIfPresent(k); return v }},
		{"otter.Get-4x", func(k K) *kernel { v, _ := roomy.Get(ctx, k, otterMiss); return v }},
		{"sync.Map.Load", func(k K) *kernel { v, _ := sm.Load(k); return v.(*kernel) }},
	}
}

// benchHit fills each contender with keys and measures its hits on the
// sequence hits, on one goroutine, then on GOMAXPROCS goroutines
// (b.RunParallel), each walking the sequence from its own offset. Names are
// benchstat keys: compare with -col /cache.
func benchHit[K comparable](b *testing.B, keys, hits []K) {
	for _, mode := range []string{"serial", "parallel"} {
		for _, c := range contenders(b, keys) {
			b.Run("mode="+mode+"/cache="+c.name, func(b *testing.B) {
				b.ReportAllocs()
				if mode == "serial" {
					serial(b, hits, c.hit)
				} else {
					parallel(b, hits, c.hit)
				}
			})
		}
	}
}

func serial[K comparable](b *testing.B, keys []K, hit lookup[K]) {
	i := 0
	for b.Loop() {
		if hit(keys[i%numKeys]) == nil {
			b.Fatal("miss")
		}
		i++
	}
}

// parallel starts the goroutines at offsets a prime apart, so that they
// walk the keys without meeting: sharing is what key=hot measures.
func parallel[K comparable](b *testing.B, keys []K, hit lookup[K]) {
	var start atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		i := int(start.Add(61))
		for pb.Next() {
			if hit(keys[i%numKeys]) == nil {
				b.Error("miss")
				return
			}
			i++
		}
	})
}

// hotKeys is the worst case for counted handles: every goroutine launches
// the same kernel, so every hit writes the same entry's counters.
func hotKeys() []string {
	keys := make([]string, numKeys)
	for i := range keys {
		keys[i] = kernelName(numKeys / 2)
	}
	return keys
}

// BenchmarkHit measures in-process hits with string keys (a kernel name, as
// the SYCL runtime's fast kernel cache keys by), with the spec's kernels-map
// key, {program, kernel name}, and with one hot string key.
func BenchmarkHit(b *testing.B) {
	b.Run("key=string", func(b *testing.B) { benchHit(b, stringKeys(), stringKeys()) })
	b.Run("key=struct", func(b *testing.B) { benchHit(b, structKeys(), structKeys()) })
	b.Run("key=hot", func(b *testing.B) { benchHit(b, stringKeys(), hotKeys()) })
}
