package opencl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kcache/kcache"
	"github.com/kcache/kcache/deps"
	"github.com/kcache/kcache/disk"
	"github.com/kcache/kcache/internal/keyparts"
)

// BenchmarkWarmLookup measures what a warm start pays on the CPU before
// the runtime sees the binary: the key (device identity, header scan,
// digests) and the disk tier's read and verification of a 100 KiB binary.
// Creating and building the program from it is PoCL's, and left out.
func BenchmarkWarmLookup(b *testing.B) {
	f := testFixture(b)
	dir := b.TempDir()
	inc := filepath.Join(dir, "inc")
	if err := os.MkdirAll(inc, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inc, "common.h"), []byte("#define ALPHA 2.0f\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	st, err := disk.Open(disk.Options{Dir: filepath.Join(dir, "cache")})
	if err != nil {
		b.Fatal(err)
	}
	bins := kcache.New(kcache.DefaultConfig(func(string) string { return "" }), nil, kcache.Tier{Kind: kcache.OutcomeDisk, Store: st})
	ctx, err := NewContext(f.dev)
	if err != nil {
		b.Fatal(err)
	}
	c := NewCache(ctx, bins, CacheOptions{CommitDelay: -1, Environ: []string{}})
	b.Cleanup(func() { c.Close(); ctx.Release() })
	src := Source{Code: []byte("#include \"common.h\"\n" + testSource), Options: "-I " + inc}
	key, err := c.Key(f.dev, src)
	if err != nil {
		b.Fatal(err)
	}
	if err := bins.Put(context.Background(), key, kcache.Entry{Binary: make([]byte, 100<<10)}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		key, err := c.Key(f.dev, src)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bins.Get(context.Background(), key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstGuardPoCL measures a new process's first scan of a PoCL
// source whose header has an include guard, as the demo's sgemv is the
// first such case of its process: the guard's question (could the
// compiler's own headers define it?) reads the text of PoCL's and clang's
// OpenCL headers, found on this machine (keyparts.OpenCLScan). Each
// iteration uses a new Scanner, which knows nothing of that text.
func BenchmarkFirstGuardPoCL(b *testing.B) {
	inc := b.TempDir()
	guarded := "#ifndef APP_COMMON_H\n#define APP_COMMON_H\n#define IDX(i) (i)\n#endif\n"
	if err := os.WriteFile(filepath.Join(inc, "common.h"), []byte(guarded), 0o644); err != nil {
		b.Fatal(err)
	}
	src := []byte("#include \"common.h\"\n#ifndef WG\n#define WG 64\n#endif\n" + testSource)
	in, err := keyparts.OpenCLScan(src, "-DWG=64 -I "+inc, keyparts.PoCL)
	if err != nil {
		b.Fatal(err)
	}
	if len(in.Builtins) == 0 {
		b.Skip("no PoCL or clang OpenCL headers on this machine")
	}
	in.MainDir = b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := deps.NewScanner(nil).Scan(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNextGuardPoCL measures a later first scan of the process: a
// new source on a Scanner that read the built-in headers' text for an
// earlier one, as the demo's second to eighth cases with the guarded
// common.h are. Its guard's question searches the kept text, or finds the
// answer kept.
func BenchmarkNextGuardPoCL(b *testing.B) {
	inc := b.TempDir()
	guarded := "#ifndef APP_COMMON_H\n#define APP_COMMON_H\n#define IDX(i) (i)\n#endif\n"
	if err := os.WriteFile(filepath.Join(inc, "common.h"), []byte(guarded), 0o644); err != nil {
		b.Fatal(err)
	}
	s := deps.NewScanner(nil)
	mainDir := b.TempDir()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		src := fmt.Appendf(nil, "// source %d\n#include \"common.h\"\n%s", i, testSource)
		in, err := keyparts.OpenCLScan(src, "-I "+inc, keyparts.PoCL)
		if err != nil {
			b.Fatal(err)
		}
		if len(in.Builtins) == 0 {
			b.Skip("no PoCL or clang OpenCL headers on this machine")
		}
		in.MainDir = mainDir
		if _, _, err := s.Scan(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}
