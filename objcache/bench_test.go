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
