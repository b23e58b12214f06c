package bench

import (
	"context"
	"fmt"
	"sync"
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

// contenders returns, for the same key set, a hit function per cache.
func contenders[K comparable](b *testing.B, keys []K) []struct {
	name string
	hit  lookup[K]
} {
	ctx := context.Background()
	objs := objcache.New[K, *kernel](objcache.Options[*kernel]{})
	var sm sync.Map
	ot := otter.Must(&otter.Options[K, *kernel]{MaximumSize: 4 * numKeys})
	for i, k := range keys {
		v := &kernel{id: i}
		h, err := objs.GetOrBuild(ctx, k, func(context.Context) (*kernel, int64, error) { return v, 1, nil })
		if err != nil {
			b.Fatal(err)
		}
		h.Release()
		sm.Store(k, v)
		ot.Set(k, v)
	}
	miss := func(context.Context) (*kernel, int64, error) { panic("miss") }
	otterMiss := otter.LoaderFunc[K, *kernel](func(context.Context, K) (*kernel, error) { panic("miss") })
	return []struct {
		name string
		hit  lookup[K]
	}{
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
		{"sync.Map.Load", func(k K) *kernel { v, _ := sm.Load(k); return v.(*kernel) }},
	}
}

// benchHit measures each contender's hit on one goroutine, then on
// GOMAXPROCS goroutines (b.RunParallel), each walking the keys from its own
// offset.
func benchHit[K comparable](b *testing.B, keys []K) {
	for _, c := range contenders(b, keys) {
		b.Run(c.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if c.hit(keys[i%numKeys]) == nil {
					b.Fatal("miss")
				}
				i++
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			var next sync.Mutex
			offset := 0
			b.RunParallel(func(pb *testing.PB) {
				next.Lock()
				i := offset
				offset += numKeys / 8
				next.Unlock()
				for pb.Next() {
					if c.hit(keys[i%numKeys]) == nil {
						b.Error("miss")
						return
					}
					i++
				}
			})
		})
	}
}

// BenchmarkHitString measures in-process hits with string keys (a kernel
// name, as the SYCL runtime's fast kernel cache keys by).
func BenchmarkHitString(b *testing.B) { benchHit(b, stringKeys()) }

// BenchmarkHitStruct measures in-process hits with the spec's kernels-map
// key, {program, kernel name}.
func BenchmarkHitStruct(b *testing.B) { benchHit(b, structKeys()) }
