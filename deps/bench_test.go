package deps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
