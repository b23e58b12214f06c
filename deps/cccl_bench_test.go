package deps

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/disk"
)

// BenchmarkCCCLNewProcessKey is BenchmarkNewProcessKey on the CCCL
// kernels of TestCCCLNewProcess (cuda/cccl_newprocess_test.go), against
// a toolkit's include directory (KCACHE_CUDA_INCLUDE; a copy serves):
// per kernel, "record" is a new process's first key (the record loaded
// from a disk tier, decoded, its stats), "read" the disk tier's read
// alone, "decode" the decode alone, and "floor" the record's stats alone,
// in parallel. It reports the record's observations, dependencies and
// bytes.
func BenchmarkCCCLNewProcessKey(b *testing.B) {
	inc := os.Getenv("KCACHE_CUDA_INCLUDE")
	if inc == "" {
		b.Skip("KCACHE_CUDA_INCLUDE is not set")
	}
	for _, name := range []string{"cub_block_reduce", "cub_radix_sort", "cub_block_scan_warp", "thrust_tuple", "libcudacxx"} {
		src, err := os.ReadFile(filepath.Join(ccclDir(b), name+".cu"))
		if err != nil {
			b.Fatal(err)
		}
		in := nvrtc13Input(src, "k.cu", b.TempDir(), []string{"-I" + inc + "/cccl", "-I" + inc, "-std=c++17", "-arch=sm_90"})
		in.VerifiesPredefines = true // as the cuda package's input does (NVRTC is asked before a store)
		b.Run(name, func(b *testing.B) { benchCCCLRecord(b, in) })
	}
}

// benchCCCLRecord runs BenchmarkCCCLNewProcessKey's cases for in.
func benchCCCLRecord(b *testing.B, in Input) {
	st, err := disk.Open(disk.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close(context.Background())
	records := kcache.New(kcache.Config{}, nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	settled := func(opts ...Option) *Scanner {
		s := NewScanner(nil, opts...)
		s.fs.now = func() time.Time { return time.Now().Add(time.Minute) }
		return s
	}
	recorder := settled(WithRecords(records))
	if _, _, err := recorder.Scan(context.Background(), in); err != nil {
		b.Fatal(err)
	}
	recorder.writes.Wait()
	id := inputID(in, in.WorkDir)
	data, err := records.LoadRecord(context.Background(), id)
	if err != nil {
		b.Fatal(err)
	}
	m, err := decodeRecord(id, data)
	if err != nil {
		b.Fatal(err)
	}
	var paths []string
	for _, o := range m.seen {
		paths = append(paths, o.path)
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(len(m.seen)), "stats/op")
		b.ReportMetric(float64(len(m.headers)), "headers/op")
		b.ReportMetric(float64(len(data)), "record-bytes/op")
	}
	b.Run("record", func(b *testing.B) {
		for b.Loop() {
			s := settled(WithRecords(records))
			s.fs.readFile = func(p string) ([]byte, error) { b.Fatalf("read %s: the record was not used", p); return nil, nil }
			if _, err := s.AppendHeaders(context.Background(), nil, in); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, err := records.LoadRecord(context.Background(), id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeRecord(id, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			statAll(paths)
		}
		report(b)
	})
}

// BenchmarkCCCLPrepare measures what a new process's first key costs
// after its headers are known: the key's encoding and digests
// (kcache.Key.Prepare) over a CUB kernel's headers as the scan gives them,
// and over the same headers sorted as the key's encoding sorts them.
func BenchmarkCCCLPrepare(b *testing.B) {
	inc := os.Getenv("KCACHE_CUDA_INCLUDE")
	if inc == "" {
		b.Skip("KCACHE_CUDA_INCLUDE is not set")
	}
	src, err := os.ReadFile(filepath.Join(ccclDir(b), "cub_block_reduce.cu"))
	if err != nil {
		b.Fatal(err)
	}
	in := nvrtc13Input(src, "k.cu", b.TempDir(), []string{"-I" + inc + "/cccl", "-I" + inc, "-std=c++17", "-arch=sm_90"})
	in.VerifiesPredefines = true
	_, trace, err := NewScanner(nil).Scan(context.Background(), in)
	if err != nil {
		b.Fatal(err)
	}
	var headers []kcache.Header // in the order the scan found them
	for _, d := range trace {
		if d.Rule != RuleAbsent {
			headers = append(headers, kcache.Header{Name: d.Name, Digest: d.Digest})
		}
	}
	sorted := slices.Clone(headers)
	slices.SortFunc(sorted, func(a, b kcache.Header) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), bytes.Compare(a.Digest[:], b.Digest[:]))
	})
	for _, c := range []struct {
		name    string
		headers []kcache.Header
	}{{"scan-order", headers}, {"sorted", sorted}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				k := &kcache.Key{Image: kcache.Image{Format: "cuda-c++", Source: src, Headers: c.headers}}
				k.Prepare()
			}
			b.ReportMetric(float64(len(c.headers)), "headers/op")
		})
	}
}
