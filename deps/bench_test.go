package deps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// benchHeaders is the size of the include directories the benchmarks
// key: more than a thousand files, as a large kernel library has.
const benchHeaders = 1000

// benchTree writes benchHeaders headers in ten subdirectories of a new
// include directory and returns it with the headers' paths.
func benchTree(b *testing.B) (string, []string) {
	files := map[string]string{}
	for i := range benchHeaders {
		files[fmt.Sprintf("d%d/h%d.h", i%10, i)] = fmt.Sprintf("#define H%d %d\n", i, i)
	}
	root := tree(b, files)
	var paths []string
	for rel := range files {
		paths = append(paths, filepath.Join(root, rel))
	}
	return root, paths
}

// BenchmarkWarmKey measures a warm scan with 1,000 headers in the include
// directories, both ways a key can be made: the exact path (the source
// includes every header) and a manifest (the directory declared as a
// dependency: every file under it is keyed). Each
// reports the stats and reads a scan makes; "floor" stats the same files
// and nothing else.
func BenchmarkWarmKey(b *testing.B) {
	root, paths := benchTree(b)
	var exact strings.Builder
	for i := range benchHeaders {
		fmt.Fprintf(&exact, "#include <d%d/h%d.h>\n", i%10, i)
	}
	cases := []struct {
		name string
		in   Input
	}{
		{"exact", Input{Source: []byte(exact.String()), WorkDir: root, Args: []string{"-I."}, Trigraphs: TrigraphsOn}},
		{"manifest", Input{Source: []byte("kernel void k() {}\n"), WorkDir: root, Depends: []string{"."}, Trigraphs: TrigraphsOn}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := NewScanner(nil)
			n := counting(s)
			if _, _, err := s.Scan(context.Background(), c.in); err != nil {
				b.Fatal(err)
			}
			n.stats.Store(0)
			n.reads.Store(0)
			n.lists.Store(0)
			for b.Loop() {
				if _, _, err := s.Scan(context.Background(), c.in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n.stats.Load())/float64(b.N), "stats/op")
			b.ReportMetric(float64(n.reads.Load()+n.lists.Load())/float64(b.N), "reads/op")
		})
	}
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			for _, p := range paths {
				if _, err := os.Stat(p); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(benchHeaders, "stats/op")
	})
}

// BenchmarkWarmHashcat measures a warm scan of a real kernel: hashcat's
// MD5 kernel, with its computed includes, as the opencl backend scans it
// on every lookup.
func BenchmarkWarmHashcat(b *testing.B) {
	k := filepath.Join(hashcatDir, "OpenCL", "m00000_a0-optimized.cl")
	src, err := os.ReadFile(k)
	if err != nil {
		b.Skip(err)
	}
	s := NewScanner(nil)
	n := counting(s)
	in := Input{Source: src, WorkDir: hashcatDir, Args: hashcatArgs, SearchWorkDir: true, CompleteSearchPath: true, Trigraphs: TrigraphsOn}
	_, trace, err := s.Scan(context.Background(), in)
	if err != nil {
		b.Fatal(err)
	}
	n.stats.Store(0)
	for b.Loop() {
		if _, _, err := s.Scan(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n.stats.Load())/float64(b.N), "stats/op")
	b.ReportMetric(float64(len(trace)), "deps")
}

// recordBenchHeaders is the size of the tree of BenchmarkNewProcessKey:
// about the 2,576 headers a CUB kernel's key holds.
const recordBenchHeaders = 2500

// recordBenchTree writes headers headers (a multiple of 50), fifty to a
// directory, each directory's reached through its own all.h, and returns
// the tree's root, the input that includes them all, and every path the
// scan stats.
func recordBenchTree(tb testing.TB, headers int) (string, Input, []string) {
	files := map[string]string{}
	var top strings.Builder
	for d := range headers / 50 {
		var all strings.Builder
		for i := range 50 {
			fmt.Fprintf(&all, "#include \"h%d.h\"\n", i)
			files[fmt.Sprintf("include/lib/detail/d%d/h%d.h", d, i)] = fmt.Sprintf(
				"#ifndef LIB_D%d_H%d\n#define LIB_D%d_H%d\n#define VALUE_%d_%d (%d * 2)\nstatic inline int f_%d_%d(int x) { return x + VALUE_%d_%d; }\n#endif\n",
				d, i, d, i, d, i, i, d, i, d, i)
		}
		files[fmt.Sprintf("include/lib/detail/d%d/all.h", d)] = all.String()
		fmt.Fprintf(&top, "#include \"detail/d%d/all.h\"\n", d)
	}
	files["include/lib/all.h"] = top.String()
	root := tree(tb, files)
	in := Input{Source: []byte("#include <lib/all.h>\nkernel void k() {}\n"), WorkDir: root, Args: []string{"-Iinclude"}, Trigraphs: TrigraphsOn}
	s := NewScanner(nil)
	counting(s)
	if _, _, err := s.Scan(context.Background(), in); err != nil {
		tb.Fatal(err)
	}
	var paths []string
	for _, o := range s.memos.get(inputID(in, root)).seen {
		paths = append(paths, o.path)
	}
	return root, in, paths
}

// BenchmarkNewProcessKey measures the first key of a new process over a
// 2,500-header tree: "record" loads the dependency record from a disk
// tier and stats what it lists (Scan: headers and trace; "record-key" is
// the same for the headers alone, as a key takes them; "record-load" is
// its part before the stats), "cold" is a scan without records (every
// header read and lexed, from the page cache), and "floor" stats the
// same paths, in parallel, and does nothing else. Each iteration uses a
// new Scanner, so nothing of an earlier one is remembered.
func BenchmarkNewProcessKey(b *testing.B) {
	_, in, paths := recordBenchTree(b, recordBenchHeaders)
	st, err := disk.Open(disk.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close(context.Background())
	records := kcache.New(kcache.Config{}, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	settledScan := func(opts ...Option) *Scanner {
		s := NewScanner(nil, opts...)
		// The tree was just written: its files count as settled, as they
		// would a few seconds later.
		s.fs.now = func() time.Time { return time.Now().Add(time.Minute) }
		return s
	}
	recorder := settledScan(WithRecords(records))
	if _, _, err := recorder.Scan(context.Background(), in); err != nil {
		b.Fatal(err)
	}
	recorder.writes.Wait()
	// "record" takes what Scan gives (headers and trace); "record-key"
	// takes the key's part alone (AppendHeaders, as the cuda and opencl
	// caches' keys call it), no trace copied.
	for _, c := range []struct {
		name string
		key  func(*Scanner) error
	}{
		{"record", func(s *Scanner) error { _, _, err := s.Scan(context.Background(), in); return err }},
		{"record-key", func(s *Scanner) error { _, err := s.AppendHeaders(context.Background(), nil, in); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var reads atomic.Int64
			for b.Loop() {
				s := settledScan(WithRecords(records))
				s.fs.readFile = func(p string) ([]byte, error) { reads.Add(1); return os.ReadFile(p) }
				if err := c.key(s); err != nil {
					b.Fatal(err)
				}
			}
			if reads.Load() != 0 {
				b.Fatalf("%d headers read: the record was not used", reads.Load())
			}
			b.ReportMetric(float64(len(paths)), "stats/op")
		})
	}
	b.Run("record-load", func(b *testing.B) {
		// The record's part of "record" without its stats: load from
		// the disk tier, checksum and decode.
		id := inputID(in, in.WorkDir)
		for b.Loop() {
			data, err := records.LoadRecord(context.Background(), id)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := decodeRecord(id, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := settledScan().Scan(context.Background(), in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			statAll(paths)
		}
		b.ReportMetric(float64(len(paths)), "stats/op")
	})
	b.Run("floor-at", func(b *testing.B) {
		// The same stats as the record's check makes them: relative to
		// their directories (dirStats), in parallel, and nothing else.
		seen := make([]observation, len(paths))
		for i, p := range paths {
			seen[i].path = p
		}
		for b.Loop() {
			statAllAt(seen)
		}
		b.ReportMetric(float64(len(paths)), "stats/op")
	})
}

// statAllAt is statAll by dirStats.
func statAllAt(seen []observation) {
	var wg sync.WaitGroup
	var next atomic.Int64
	now := time.Now()
	for range statWorkers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dirs dirStats
			defer dirs.close()
			for {
				i := int(next.Add(statChunk)) - statChunk
				if i >= len(seen) {
					return
				}
				chunk := seen[i:min(i+statChunk, len(seen))]
				for j := range chunk {
					dirs.observe(chunk, j, now)
				}
			}
		}()
	}
	wg.Wait()
}

// statAll stats paths with as many goroutines as memo.valid uses.
func statAll(paths []string) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range statWorkers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(statChunk)) - statChunk
				if i >= len(paths) {
					return
				}
				for _, p := range paths[i:min(i+statChunk, len(paths))] {
					os.Stat(p)
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkDecodeRecord decodes the dependency record of a CUB-sized
// key (650 headers): what a new process does with the record before its
// stats.
func BenchmarkDecodeRecord(b *testing.B) {
	_, in, _ := recordBenchTree(b, newProcHeaders)
	records := newMemRecords()
	s := NewScanner(nil, WithRecords(records))
	s.fs.now = func() time.Time { return time.Now().Add(time.Minute) }
	if _, _, err := s.Scan(context.Background(), in); err != nil {
		b.Fatal(err)
	}
	s.writes.Wait()
	id, data := records.only(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRecord(id, data); err != nil {
			b.Fatal(err)
		}
	}
}
