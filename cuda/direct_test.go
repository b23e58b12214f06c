package cuda

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kcache/kcache"
)

// directName returns the name of src's direct record in c, and its key.
func directName(t *testing.T, c *Cache, src Source) (name, key kcache.Digest) {
	t.Helper()
	p, err := c.plan(src)
	if err != nil {
		t.Fatal(err)
	}
	req, err := c.directRequestOf(src, p)
	if err != nil {
		t.Fatal(err)
	}
	return req.id, mustKey(t, c, src)
}

// TestDirectNameCoversKey: a direct record is trusted to name the key of
// every request whose name it has, once its inputs' records hold, so the
// name must change with every part of the key that no header file gives:
// of all the variants below, two with one name have one key, and every
// variant whose key differs from the base's has another name. Editing a
// header changes the key and not the name (the records inside catch it);
// variables the key leaves out change neither.
func TestDirectNameCoversKey(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src", "k.cu"), `#include "local.h"`+"\n#include <lib.h>\n__global__ void k() {}\n")
	writeFile(t, filepath.Join(dir, "src", "local.h"), "#define A 1\n")
	writeFile(t, filepath.Join(dir, "inc", "lib.h"), "#define B 2\n")
	writeFile(t, filepath.Join(dir, "table.bin"), "1 2 3")
	code, _ := os.ReadFile(filepath.Join(dir, "src", "k.cu"))
	env := []string{"CUDA_FORCE_PTX_JIT=0", "HOME=/root"}
	base := Source{Code: code, Path: filepath.Join(dir, "src", "k.cu"), Options: []string{"--include-path", filepath.Join(dir, "inc")},
		Headers: []Header{{Name: "mem.h", Content: []byte("int m;")}}, NameExpressions: []string{"k"}}
	type variant struct {
		what      string
		name, key kcache.Digest
	}
	var variants []variant
	add := func(what string, mutate func(*Source, *Cache)) {
		t.Helper()
		src := base
		src.Options = slices.Clone(base.Options)
		src.Headers = slices.Clone(base.Headers)
		src.NameExpressions = slices.Clone(base.NameExpressions)
		c := fakeCache(t, env)
		mutate(&src, c)
		name, key := directName(t, c, src)
		variants = append(variants, variant{what, name, key})
	}
	add("base", func(*Source, *Cache) {})
	add("source", func(s *Source, _ *Cache) { s.Code = append(slices.Clone(s.Code), ' ') })
	add("option", func(s *Source, _ *Cache) { s.Options = append(s.Options, "-DX=1") })
	add("arch", func(s *Source, _ *Cache) { s.Options = append(s.Options, "-arch=compute_90") })
	add("option position", func(s *Source, _ *Cache) { s.Options = append([]string{"-DX=1"}, s.Options...) })
	add("name expression", func(s *Source, _ *Cache) { s.NameExpressions = append(s.NameExpressions, "k2") })
	add("name expressions split", func(s *Source, _ *Cache) { s.NameExpressions = []string{"k", ""} })
	add("memory header content", func(s *Source, _ *Cache) { s.Headers[0].Content = []byte("int n;") })
	add("memory header name", func(s *Source, _ *Cache) { s.Headers[0].Name = "mem2.h" })
	add("memory headers swapped", func(s *Source, _ *Cache) {
		s.Headers = []Header{{Name: "b.h", Content: []byte("int a;")}, {Name: "a.h", Content: []byte("int b;")}}
	})
	add("memory headers", func(s *Source, _ *Cache) {
		s.Headers = []Header{{Name: "a.h", Content: []byte("int a;")}, {Name: "b.h", Content: []byte("int b;")}}
	})
	add("no memory header", func(s *Source, _ *Cache) { s.Headers = nil })
	add("program name", func(s *Source, _ *Cache) { s.Path = filepath.Join(dir, "src", "other.cu") })
	add("no source include", func(s *Source, _ *Cache) { s.Options = append(s.Options, "-no-source-include") })
	add("declared dependency", func(s *Source, _ *Cache) { s.Depends = []string{filepath.Join(dir, "table.bin")} })
	add("device", func(_ *Source, c *Cache) { c.id.dev.Name = "NVIDIA H200" })
	add("architecture", func(_ *Source, c *Cache) { c.id.arch, c.id.dev.Version = "sm_100", "sm_100" })
	add("driver", func(_ *Source, c *Cache) { c.id.dev.Driver = "cuda 13010" })
	add("nvrtc", func(_ *Source, c *Cache) { c.id.comp.LibraryTime = 3 })
	add("nvrtc version", func(_ *Source, c *Cache) { c.id.comp.Version = "13.1" })
	add("compiler files", func(_ *Source, c *Cache) { c.id.files = func() kcache.Digest { return kcache.Digest{1} } })
	add("env", func(_ *Source, c *Cache) { c.env = compilerEnv.Select([]string{"CUDA_FORCE_PTX_JIT=1"}) })
	add("nvrtc env", func(_ *Source, c *Cache) { c.env = append(c.env, kcache.EnvVar{Name: "NVRTC_X", Value: "1"}) })
	add("jit options", func(_ *Source, c *Cache) { c.jit = map[JITOption]int{JITOptimizationLevel: 1} })
	add("base directory", func(_ *Source, c *Cache) { c.baseDir = dir })

	for i, a := range variants {
		if i > 0 && a.key != variants[0].key && a.name == variants[0].name {
			t.Errorf("%s: the key changed and the direct record's name did not", a.what)
		}
		for _, b := range variants[:i] {
			if a.name == b.name && a.key != b.key {
				t.Errorf("%s and %s: one direct record's name, two keys", a.what, b.what)
			}
		}
	}

	c := fakeCache(t, env)
	name0, key0 := directName(t, c, base)
	p := filepath.Join(dir, "inc", "lib.h")
	writeFile(t, p, "#define B 3\n")
	if name, key := directName(t, fakeCache(t, env), base); key == key0 || name != name0 {
		t.Errorf("a header edit: key changed %v, name changed %v; want the key alone", key != key0, name != name0)
	}
	writeFile(t, p, "#define B 2\n")
	same := fakeCache(t, append(slices.Clone(env), "CUDA_VISIBLE_DEVICES=3", "CUDA_CACHE_PATH=/x", "HOME=/elsewhere"))
	if name, key := directName(t, same, base); name != name0 || key != key0 {
		t.Error("variables the key leaves out changed the direct record's name")
	}
}

// TestDirectNameWorkDir: a relative search directory is found from the
// working directory, so two working directories name two records.
func TestDirectNameWorkDir(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	src := Source{Code: []byte("#include <lib.h>\n__global__ void k() {}\n"), Options: []string{"-I", "inc"}}
	c := fakeCache(t, nil)
	t.Chdir(a)
	p, err := c.plan(src)
	if err != nil {
		t.Fatal(err)
	}
	inA, err := c.directRequestOf(src, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(b)
	inB, err := c.directRequestOf(src, p)
	if err != nil {
		t.Fatal(err)
	}
	if inA.id == inB.id {
		t.Error("one direct record's name in two working directories")
	}
}

// TestDirectRoundTrip: a direct record decodes to what was encoded, and
// every truncation of it fails to decode.
func TestDirectRoundTrip(t *testing.T) {
	d := direct{key: kcache.Digest{1, 2, 3}, buildTime: 1500 * time.Millisecond,
		records: [][]byte{[]byte("KCDR record one"), {}, []byte("three")},
		image:   (&image{format: FormatCUBIN, code: []byte("\x7fELF code")}).encode()}
	enc := d.encode()
	got, err := decodeDirect(enc)
	if err != nil {
		t.Fatal(err)
	}
	if got.key != d.key || got.buildTime != d.buildTime || !bytes.Equal(got.image, d.image) || len(got.records) != len(d.records) {
		t.Fatalf("decoded %+v, want %+v", got, d)
	}
	for i := range d.records {
		if !bytes.Equal(got.records[i], d.records[i]) {
			t.Errorf("record %d: %q, want %q", i, got.records[i], d.records[i])
		}
	}
	for n := range len(enc) {
		if _, err := decodeDirect(enc[:n]); err == nil {
			t.Fatalf("a record cut to %d of %d bytes decoded", n, len(enc))
		}
	}
	if _, err := decodeDirect(append(slices.Clone(enc), 0)); err == nil {
		t.Error("a record with a trailing byte decoded")
	}
}

// FuzzDecodeDirect: any bytes decode or fail without a panic, and what
// decodes encodes to a record that decodes alike.
func FuzzDecodeDirect(f *testing.F) {
	f.Add(direct{key: kcache.Digest{9}, records: [][]byte{[]byte("r")}, image: []byte("im")}.encode())
	f.Add(direct{}.encode())
	f.Add([]byte(directMagic + "\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := decodeDirect(data)
		if err != nil {
			return
		}
		again, err := decodeDirect(d.encode())
		if err != nil {
			t.Fatalf("a decoded record does not decode once encoded: %v", err)
		}
		if again.key != d.key || again.buildTime != d.buildTime || !bytes.Equal(again.image, d.image) ||
			!reflect.DeepEqual(normalize(again.records), normalize(d.records)) {
			t.Fatalf("decoded %+v, then %+v", d, again)
		}
	})
}

// normalize makes empty records compare equal whether nil or not.
func normalize(rs [][]byte) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// TestPrepareFirstRequestConcurrent: the names of requests made while a
// new cache prepares its first request on a goroutine of its own (as
// NewCache starts it) are the names computed once it is done: the part
// each name takes from the cache's identity is computed once, whoever
// asks first. Run with -race.
func TestPrepareFirstRequestConcurrent(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "k.cu"), "__global__ void k() {}\n")
	src := Source{Code: []byte("__global__ void k() {}\n"), Path: filepath.Join(dir, "k.cu"), NameExpressions: []string{"k"}}
	want, _ := directName(t, fakeCache(t, nil), src)
	for range 20 {
		c := fakeCache(t, nil)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.prepareFirstRequest()
		}()
		names := make(chan kcache.Digest, 4)
		for range cap(names) {
			go func() {
				p, err := c.plan(src)
				if err != nil {
					t.Error(err)
					names <- kcache.Digest{}
					return
				}
				req, err := c.directRequestOf(src, p)
				if err != nil {
					t.Error(err)
					names <- kcache.Digest{}
					return
				}
				names <- req.id
			}()
		}
		for range cap(names) {
			if got := <-names; got != want {
				t.Fatalf("a name computed during the preparation is %x, want %x", got[:6], want[:6])
			}
		}
		<-done
		if c.directBase() != fakeCache(t, nil).directBase() {
			t.Fatal("the prepared identity part differs from one computed on request")
		}
	}
}
