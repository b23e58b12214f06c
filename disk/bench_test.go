package disk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kcache/kcache"
)

// BenchmarkHit compares a hit with os.ReadFile of the file that holds the
// binary, the floor for any store that keeps one entry per file, and with a
// hit on an entry of version 1 (a record and a .bin), as caches written
// before entry version 2 hold them. 8 KB is a small CUDA module's CUBIN.
func BenchmarkHit(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"8KB", 8 << 10}, {"100KB", 100 << 10}, {"6MB", 6 << 20}} {
		s := openTest(b, Options{})
		mustPut(b, s, 1, size.n)
		putLegacy(b, s, 2, size.n)
		key := testKey(1)
		path := binaryFile(s.leafDir(s.digests(key)))
		b.Run("store/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if _, err := s.Get(context.Background(), key); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("legacy/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if _, err := s.Get(context.Background(), testKey(2)); err != nil {
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

// freshKeys numbers keys never stored before, above every fixture's.
var freshKeys atomic.Int64

func init() { freshKeys.Store(1 << 30) }

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
	if fixtures.dirs == nil {
		fixtures.dirs = map[string]string{}
	}
	fixtures.dirs[name] = buildFixture(b, n)
	return fixtures.dirs[name]
}

// buildFixture returns a new cache directory holding entries 0..n-1. Its
// parent is removed by TestMain if it is registered in fixtures, else at
// the end of b.
func buildFixture(b *testing.B, n int) string {
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
	return s.root
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range fixtures.dirs {
		os.RemoveAll(filepath.Dir(dir))
	}
	os.Exit(code)
}

// BenchmarkHitEntries measures a hit in caches of 10^3 and 10^5 entries,
// over the same number of distinct keys spread across the whole cache, and,
// as a control, os.ReadFile of the same binaries: the kernel's path lookup
// slows a little as the dentry cache grows, for any store of one file per
// entry.
func BenchmarkHitEntries(b *testing.B) {
	for _, n := range []int{1e3, 1e5} {
		s := openTest(b, Options{Dir: fixture(b, fmt.Sprint("hit", n), n)})
		keys := make([]*kcache.Key, 1000)
		paths := make([]string, len(keys))
		for i := range keys {
			keys[i] = testKey(i * (n / len(keys)))
			paths[i] = binaryFile(s.leafDir(s.digests(keys[i])))
		}
		b.Run(fmt.Sprintf("store/entries=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, err := s.Get(context.Background(), keys[i%len(keys)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("readfile/entries=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, err := os.ReadFile(paths[i%len(paths)]); err != nil {
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
			for b.Loop() {
				mustPut(b, s, int(freshKeys.Add(1)), fixtureSize)
			}
		})
	}
	b.Run("fsync/100KB", func(b *testing.B) {
		s := openTest(b, Options{})
		s.sync = true
		for b.Loop() {
			mustPut(b, s, int(freshKeys.Add(1)), 100<<10)
		}
	})
}

// binaryFile returns the file that holds slot 0's binary in leaf: its .bin
// for an entry of version 1, else its record's file.
func binaryFile(leaf string) string {
	if _, err := os.Stat(binPath(leaf, 0)); err == nil {
		return binPath(leaf, 0)
	}
	return srcPath(leaf, 0)
}
