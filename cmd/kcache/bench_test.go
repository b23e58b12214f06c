package main

import (
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kcache/kcache/disk"
)

// writeTree writes n entries with binaries of binSize bytes straight into
// the disk tier's layout under root (what Put would write, without a build,
// a lock or an fsync per entry), so that a large cache takes seconds to
// make. Entries are spread over eight devices.
func writeTree(tb testing.TB, root string, n, binSize int) {
	tb.Helper()
	created := time.Now().Add(-time.Hour)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				if err := writeTreeEntry(root, i, binSize, created); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}

func writeTreeEntry(root string, i, binSize int, created time.Time) error {
	k := fakeKey("Bench GPU "+strconv.Itoa(i%8), i)
	bin := make([]byte, binSize)
	copy(bin, fmt.Sprint(i))
	rec := disk.Record{Key: *k, Size: int64(len(bin)), SHA256: sha256.Sum256(bin),
		CRC32C: crc32.Checksum(bin, crc32.MakeTable(crc32.Castagnoli)), BuildTime: 300 * time.Millisecond, Created: created}
	src, err := rec.MarshalBinary()
	if err != nil {
		return err
	}
	leaf := disk.EntryDir(root, k)
	if err := os.MkdirAll(leaf, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(leaf, "0.bin"), bin, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(leaf, "0.src"), src, 0o600)
}

// benchTree returns a directory holding a cache of n entries, removed when
// the benchmark ends.
func benchTree(b *testing.B, n, binSize int) string {
	dir := b.TempDir()
	start := time.Now()
	writeTree(b, filepath.Join(dir, "cache"), n, binSize)
	b.Logf("wrote %d entries in %v", n, time.Since(start))
	return dir
}

// BenchmarkStatsLs runs `kcache stats` and `kcache ls` as processes on a
// cache of 10^5 small entries. The target is under 2 s each.
//
//	go test -run '^$' -bench StatsLs -benchtime 3x ./cmd/kcache
func BenchmarkStatsLs(b *testing.B) {
	dir := benchTree(b, 100_000, 64)
	for _, args := range [][]string{{"stats", "--json"}, {"ls", "--json"}, {"ls"}} {
		b.Run(args[0]+map[bool]string{true: "-json", false: ""}[len(args) > 1], func(b *testing.B) {
			for b.Loop() {
				cmd := kcacheCmd(b, dir, args...)
				cmd.Stdout = nil
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}

// BenchmarkBundle exports and imports a cache of 5000 entries of 16 KiB
// through kcache and through `tar --zstd` of the same directory, and
// reports the throughput in bytes of cache per second.
//
//	go test -run '^$' -bench Bundle -benchtime 3x ./cmd/kcache
func BenchmarkBundle(b *testing.B) {
	const n, size = 5000, 16 << 10
	dir := benchTree(b, n, size)
	cache := filepath.Join(dir, "cache")
	bytes := dirBytes(b, cache)
	out := b.TempDir()
	bundle, tarball := filepath.Join(out, "b.kcb"), filepath.Join(out, "b.tar.zst")
	run := func(b *testing.B, cmd *exec.Cmd) {
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, msg)
		}
	}
	b.Run("export/kcache", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			run(b, kcacheCmd(b, dir, "export", bundle))
		}
	})
	b.Run("export/tar-zstd", func(b *testing.B) {
		requireTool(b, "zstd")
		b.SetBytes(bytes)
		for b.Loop() {
			run(b, exec.Command("tar", "--zstd", "-cf", tarball, "-C", cache, "."))
		}
	})
	b.Run("import/kcache", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			b.StopTimer()
			dst := b.TempDir()
			b.StartTimer()
			run(b, kcacheCmd(b, dst, "import", "--all-devices", bundle))
		}
	})
	b.Run("import/tar-zstd", func(b *testing.B) {
		requireTool(b, "zstd")
		b.SetBytes(bytes)
		for b.Loop() {
			b.StopTimer()
			dst := b.TempDir()
			b.StartTimer()
			run(b, exec.Command("tar", "--zstd", "-xf", tarball, "-C", dst))
		}
	})
	for _, f := range []string{bundle, tarball} {
		if fi, err := os.Stat(f); err == nil {
			b.Logf("%s: %d bytes for %d bytes of cache", filepath.Base(f), fi.Size(), bytes)
		}
	}
}

func requireTool(b *testing.B, name string) {
	if _, err := exec.LookPath(name); err != nil {
		b.Skipf("%s not installed", name)
	}
}

func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
