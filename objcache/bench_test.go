package objcache

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkHit measures a hit through GetOrBuild and Release on 1024 string
// keys; bench/ compares it with other caches.
func BenchmarkHit(b *testing.B) {
	ctx := context.Background()
	c := New[string, *object](Options[*object]{Threshold: 1 << 30})
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("_ZTSZ4mainEUlN4sycl2idILi1EEEE_%04d", i)
		mustGet(b, c, keys[i], builder(keys[i], 1)).Release()
	}
	build := builder("", 1)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h, _ := c.GetOrBuild(ctx, keys[i%len(keys)], build)
		h.Release()
		i++
	}
}

// BenchmarkMissDisabled measures a miss of a disabled cache, the object
// tier of a process that keeps nothing in memory: every GetOrBuild builds,
// and every Release drops what it built. Its cost is the object tier's
// share of a warm start's first request for a module.
func BenchmarkMissDisabled(b *testing.B) {
	ctx := context.Background()
	c := New[string, *object](Options[*object]{Disabled: true})
	build := builder("k", 1)
	b.ReportAllocs()
	for b.Loop() {
		h, err := c.GetOrBuild(ctx, "k", build)
		if err != nil {
			b.Fatal(err)
		}
		h.Release()
	}
}

// BenchmarkMissDisabledDeep is BenchmarkMissDisabled with a builder that
// needs 64 KiB of stack, as a disk read and a driver call through purego
// do: a build on a new goroutine grows its stack every time.
func BenchmarkMissDisabledDeep(b *testing.B) {
	ctx := context.Background()
	c := New[string, *object](Options[*object]{Disabled: true})
	build := func(ctx context.Context) (*object, int64, error) {
		deepStack(64)
		return &object{}, 1, nil
	}
	b.ReportAllocs()
	for b.Loop() {
		h, err := c.GetOrBuild(ctx, "k", build)
		if err != nil {
			b.Fatal(err)
		}
		h.Release()
	}
}

// deepStack uses about n KiB of stack.
//
//go:noinline
func deepStack(n int) byte {
	var frame [1024]byte
	frame[n%len(frame)] = byte(n)
	if n == 0 {
		return frame[0]
	}
	return deepStack(n-1) + frame[n%len(frame)]
}

// BenchmarkLoadDisabled compares, side by side, a disabled cache's miss
// whose object comes from a load (a disk hit) made through GetOrBuild (on
// a kept build goroutine) and through GetOrLoad (on the caller's), with
// 64 KiB of stack as BenchmarkMissDisabledDeep.
func BenchmarkLoadDisabled(b *testing.B) {
	ctx := context.Background()
	build := func(context.Context) (*object, int64, error) {
		deepStack(64)
		return &object{}, 1, nil
	}
	b.Run("GetOrBuild", func(b *testing.B) {
		c := New[string, *object](Options[*object]{Disabled: true})
		b.ReportAllocs()
		for b.Loop() {
			h, err := c.GetOrBuild(ctx, "k", build)
			if err != nil {
				b.Fatal(err)
			}
			h.Release()
		}
	})
	b.Run("GetOrLoad", func(b *testing.B) {
		c := New[string, *object](Options[*object]{Disabled: true})
		load := func(ctx context.Context) (*object, int64, bool) {
			o, size, err := build(ctx)
			return o, size, err == nil
		}
		b.ReportAllocs()
		for b.Loop() {
			h, err := c.GetOrLoad(ctx, "k", load, build)
			if err != nil {
				b.Fatal(err)
			}
			h.Release()
		}
	})
}
