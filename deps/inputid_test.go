package deps

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/kcache/kcache"
)

// writePerFieldID is inputID as it was written before its fields were
// encoded into one buffer: a write per count and per string, the compiler
// macros by the digest of their list's own such writes (record version 7).
// Records are named by it, so inputID must hash the very same bytes.
func writePerFieldID(in Input, wd string) kcache.Digest {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	count := func(v int) { h.Write(n[:binary.PutUvarint(n[:], uint64(v))]) }
	put := func(s string) {
		count(len(s))
		h.Write([]byte(s))
	}
	list := func(l []string) {
		count(len(l))
		for _, s := range l {
			put(s)
		}
	}
	put("kcache/deps-input")
	count(recordVersion)
	put(scannerBuild())
	put(string(in.Source))
	put(in.Path)
	put(wd)
	put(in.BaseDir)
	list(in.Args)
	list(in.Depends)
	put(idMainDir(in))
	list(in.Builtins)
	list(in.SystemDirs)
	list(in.CompilerHeaders)
	count(len(in.CompilerMacros))
	if len(in.CompilerMacros) > 0 {
		// By the digest of the list's encoding, as list writes it.
		outer := h
		h = sha256.New()
		list(in.CompilerMacros)
		outer.Write(h.Sum(nil))
		h = outer
	}
	var flags uint
	count(int(in.Trigraphs))
	for i, f := range []bool{in.SearchWorkDir, in.CompleteSearchPath, in.EveryCandidate, in.VerifiesPredefines, in.PrivateDir != "", in.LexesC, in.PredefinesAfterOptions, in.LexesCPlusPlus} {
		if f {
			flags |= 1 << i
		}
	}
	count(int(flags))
	var d kcache.Digest
	h.Sum(d[:0])
	return d
}

// manyMacros is an input shaped like NVRTC's: a long list of compiler
// macros, a source larger than the pooled buffer's first size.
func manyMacros() Input {
	macros := make([]string, 300)
	for i := range macros {
		macros[i] = fmt.Sprintf("cudaMacro%d_%s", i, strings.Repeat("x", i%40))
	}
	return Input{Source: []byte(strings.Repeat("__global__ void k() {}\n", 2000)), Path: "k.cu",
		Args: []string{"-arch=sm_90", "-I", "inc"}, CompilerHeaders: []string{"__nv_nvrtc_builtin_header.h"},
		CompilerMacros: macros, CompleteSearchPath: true, VerifiesPredefines: true, Trigraphs: 2}
}

// TestInputIDEncoding: inputID names the same records as a write per
// field did, for every field changed, an empty input and a large one.
func TestInputIDEncoding(t *testing.T) {
	base := Input{Source: []byte("s"), Args: []string{"-Ia"}, Depends: []string{"d"}, Builtins: []string{"b"},
		SystemDirs: []string{"/s"}, CompilerHeaders: []string{"h"}, CompilerMacros: []string{"M"}}
	cases := changedInputs(t, base)
	cases["base"], cases["empty"], cases["nvrtc-like"] = base, Input{}, manyMacros()
	for name, in := range cases {
		for _, wd := range []string{"/wd", "", "/a/much/longer/working/directory"} {
			if got, want := inputID(in, wd), writePerFieldID(in, wd); got != want {
				t.Errorf("%s, wd %q: inputID %x, a write per field %x", name, wd, got[:8], want[:8])
			}
		}
	}
}

// TestMacroListDigestByContent: a list's digest follows its strings, not
// its backing array: a list changed in place (one name replaced, as a
// caller reusing its slice would) is hashed anew, and equal lists at other
// addresses, or built at run time, share a digest.
func TestMacroListDigestByContent(t *testing.T) {
	l := []string{"__CUDACC__", "__NVCC__", "NV_IF_TARGET"}
	want := sha256.Sum256(appendList(nil, l))
	if got := macroListDigest(l); got != want {
		t.Fatalf("digest %x, want %x", got[:6], want[:6])
	}
	built := []string{strings.ToUpper("__cudacc__"), "__NV" + strings.Repeat("C", 2) + "__", "NV_IF_TARGET"}
	if got := macroListDigest(built); got != want {
		t.Errorf("an equal list at other addresses: digest %x, want %x", got[:6], want[:6])
	}
	l[1] = "__NVCX__" // same length, same backing array
	if got := macroListDigest(l); got == want || got != sha256.Sum256(appendList(nil, l)) {
		t.Errorf("a list changed in place kept its old digest")
	}
	b := []byte("ABCD")
	mutable := []string{unsafe.String(&b[0], 2)}
	first := macroListDigest(mutable)
	mutable[0] = unsafe.String(&b[2], 2)
	if macroListDigest(mutable) == first {
		t.Errorf("a name at another address with the same length kept the digest")
	}
	if macroListDigest(l[:2]) == macroListDigest(l) {
		t.Errorf("a shorter list kept the digest")
	}
}

// TestInputHashesConcurrent: the pooled buffers are not shared by
// concurrent hashes (run with -race).
func TestInputHashesConcurrent(t *testing.T) {
	seed := maphash.MakeSeed()
	in := manyMacros()
	wantID, wantHash := writePerFieldID(in, "/wd"), hashInput(seed, in, "/wd")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			other := Input{Source: []byte(fmt.Sprint(g)), CompilerMacros: []string{"A", "B"}}
			for range 200 {
				if inputID(in, "/wd") != wantID || hashInput(seed, in, "/wd") != wantHash {
					t.Error("a concurrent hash changed")
					return
				}
				inputID(other, "/x")
				hashInput(seed, other, "/x")
			}
		}()
	}
	wg.Wait()
}

func BenchmarkInputID(b *testing.B) {
	in := manyMacros()
	in.Source = []byte("#include \"a.h\"\n__global__ void k() {}\n")
	b.Run("buffered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			inputID(in, "/wd")
		}
	})
	b.Run("write-per-field", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			writePerFieldID(in, "/wd")
		}
	})
}

func BenchmarkHashInput(b *testing.B) {
	in := manyMacros()
	in.Source = []byte("#include \"a.h\"\n__global__ void k() {}\n")
	seed := maphash.MakeSeed()
	b.Run("buffered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hashInput(seed, in, "/wd")
		}
	})
	b.Run("write-per-field", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			writePerFieldHash(seed, in, "/wd")
		}
	})
}

// writePerFieldHash is hashInput as it was before: a write per count and
// per string, every macro included (the baseline of BenchmarkHashInput).
func writePerFieldHash(seed maphash.Seed, in Input, wd string) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	count := func(n int) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(n))
		h.Write(b[:])
	}
	put := func(s string) {
		count(len(s))
		h.WriteString(s)
	}
	list := func(l []string) {
		count(len(l))
		for _, s := range l {
			put(s)
		}
	}
	count(len(in.Source))
	h.Write(in.Source)
	put(wd)
	put(in.Path)
	put(in.WorkDir)
	put(in.BaseDir)
	put(in.MainDir)
	list(in.Args)
	list(in.Depends)
	list(in.Builtins)
	list(in.SystemDirs)
	list(in.CompilerHeaders)
	list(in.CompilerMacros)
	count(int(in.Trigraphs)<<8 | int(inputFlags(in)))
	return h.Sum64()
}

// TestMemoMiddleMacro: hashInput takes only the ends of the compiler's
// macros, so inputs that differ in a middle one share a slot; the memo of
// one is never the other's.
func TestMemoMiddleMacro(t *testing.T) {
	c := newMemoCache()
	a, b := manyMacros(), manyMacros()
	b.CompilerMacros = slices.Clone(b.CompilerMacros)
	b.CompilerMacros[len(b.CompilerMacros)/2] = "changed"
	ha, hb := hashInput(c.seed, a, "/wd"), hashInput(c.seed, b, "/wd")
	if ha != hb {
		t.Fatal("the inputs' hashes differ: this test no longer tests a shared slot")
	}
	ma, mb := &memo{}, &memo{}
	c.put(ha, inputID(a, "/wd"), a, "/wd", ma)
	if m, _ := c.lookup(b, "/wd"); m != nil {
		t.Fatal("b found a's memo")
	}
	c.put(hb, inputID(b, "/wd"), b, "/wd", mb)
	if m, _ := c.lookup(a, "/wd"); m != ma {
		t.Errorf("a finds %p, want its own memo %p", m, ma)
	}
	if m, _ := c.lookup(b, "/wd"); m != mb {
		t.Errorf("b finds %p, want its own memo %p", m, mb)
	}
}
