package disk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kcache/kcache"
)

// BenchmarkHit compares a hit with os.ReadFile of the same binary file,
// the floor for any store that keeps one binary per file.
func BenchmarkHit(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"100KB", 100 << 10}, {"6MB", 6 << 20}} {
		s := openTest(b, Options{})
		mustPut(b, s, 1, size.n)
		key := testKey(1)
		path := binPath(s.leafDir(s.digests(key)), 0)
		b.Run("store/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if _, err := s.Get(context.Background(), key); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("readfile/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if _, err := os.ReadFile(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fixtureSize is the binary size of fixture entries: small, so that 10^5
// of them build quickly and the benchmark measures lookups, not copies.
const fixtureSize = 512

var fixtures struct {
	sync.Mutex
	dirs map[string]string
}

// fixture returns a cache directory holding entries 0..n-1, built once
// per process and name, and removed by TestMain.
func fixture(b *testing.B, name string, n int) string {
	fixtures.Lock()
	defer fixtures.Unlock()
	if dir, ok := fixtures.dirs[name]; ok {
		return dir
	}
	dir, err := os.MkdirTemp("", "kcache-disk-bench-")
	if err != nil {
		b.Fatal(err)
	}
	s := openTest(b, Options{Dir: filepath.Join(dir, "cache")})
	var wg sync.WaitGroup
	const workers = 4
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				mustPut(b, s, i, fixtureSize)
			}
		})
	}
	wg.Wait()
	if fixtures.dirs == nil {
		fixtures.dirs = map[string]string{}
	}
	fixtures.dirs[name] = filepath.Join(dir, "cache")
	return fixtures.dirs[name]
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range fixtures.dirs {
		os.RemoveAll(filepath.Dir(dir))
	}
	os.Exit(code)
}

// BenchmarkHitEntries measures a hit in caches of 10^3 and 10^5 entries,
// over keys spread across the whole cache.
func BenchmarkHitEntries(b *testing.B) {
	for _, n := range []int{1e3, 1e5} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := openTest(b, Options{Dir: fixture(b, fmt.Sprint("hit", n), n)})
			keys := make([]*kcache.Key, 1024)
			for i := range keys {
				keys[i] = testKey(i * (n / len(keys)))
			}
			i := 0
			for b.Loop() {
				if _, err := s.Get(context.Background(), keys[i%len(keys)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkPut measures an insert without eviction into caches of 10^3 and
// 10^5 entries, and one with fsync for comparison.
func BenchmarkPut(b *testing.B) {
	for _, n := range []int{1e3, 1e5} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := openTest(b, Options{Dir: fixture(b, fmt.Sprint("put", n), n)})
			i := n
			for b.Loop() {
				mustPut(b, s, i, fixtureSize)
				i++
			}
		})
	}
	b.Run("fsync/100KB", func(b *testing.B) {
		s := openTest(b, Options{})
		s.sync = true
		i := 0
		for b.Loop() {
			mustPut(b, s, i, 100<<10)
			i++
		}
	})
}

// BenchmarkEvict measures an insert that triggers an eviction pass in a
// cache of 10^5 entries. The cache is kept just full, with a target just
// under the limit, so every insert walks all entries and evicts the oldest
// one: the cost of one pass. With the default EvictTo of 0.5 a pass comes
// once per 5*10^4 inserts.
func BenchmarkEvict(b *testing.B) {
	const n = 100_000
	dir := fixture(b, "evict", n)
	probe := openTest(b, Options{Dir: dir})
	total, err := probe.Size(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	s := openTest(b, Options{Dir: dir, MaxSize: total, EvictTo: 1 - 1.0/n})
	i := n
	for b.Loop() {
		mustPut(b, s, i, fixtureSize)
		i++
	}
	b.StopTimer()
	if c, _ := walkSum(b, s); c < n-2 || c > n {
		b.Fatalf("%d entries after the run, want about %d", c, n)
	}
}
