package kcache

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// sampleKey is a key with every field set, so a change to the encoding of
// any field shows in the golden files.
func sampleKey() *Key {
	return &Key{
		Device: Device{Platform: "Portable Computing Language", Name: "cpu-x86-64", Version: "OpenCL 3.0 PoCL", Driver: "6.0"},
		Compiler: Compiler{Name: "pocl", Version: "6.0+debian", Library: "/usr/lib/libpocl.so.2", LibrarySize: 1234567, LibraryTime: 1700000000123456789,
			Files: Digest{1, 2, 3}},
		Image: Image{Format: "opencl-c", Source: []byte("#include \"a.h\"\n__kernel void k(){}"), Headers: []Header{
			HeaderOf("b.h", []byte("#define B 2")),
			HeaderOf("a.h", []byte("#include \"b.h\"")),
		}},
		Spec: []SpecConstant{{ID: 7, Value: []byte{1, 0, 0, 0}}, {ID: 2, Value: []byte{0xff}}},
		Options: BuildOptions{Compile: "-cl-fast-relaxed-math -DN=4", Link: "-cl-denorms-are-zero", Env: []EnvVar{
			{Name: "POCL_VECTORIZER_REMARKS", Value: "0"}, {Name: "CL_CONFIG", Value: "x"},
		}},
	}
}

// TestGoldenEncoding pins the canonical encoding and every digest. If it
// fails, the encoding changed: that is a format change, which needs a new
// FormatVersion, not a new golden file.
func TestGoldenEncoding(t *testing.T) {
	k := sampleKey()
	enc, err := k.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d := k.Digests()
	got := hex.Dump(enc) + "key " + d.Key.String() + "\ndevice " + d.Device.String() +
		"\nimage " + d.Image.String() + "\nspec " + d.Spec.String() + "\noptions " + d.Options.String() + "\n"
	golden := filepath.Join("testdata", "key.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("encoding drifted from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}

func TestEmptyKeyGoldenDigest(t *testing.T) {
	const want = "4c22b6ddd8c53c568c47ff313f4554bcd523d3d92dcbcaacd59c6739a89d60bb"
	if got := (&Key{}).Digest().String(); got != want {
		t.Errorf("empty key digest = %s, want %s", got, want)
	}
}

func TestSetLikeInputsAreOrderFree(t *testing.T) {
	a := sampleKey()
	b := sampleKey()
	b.Image.Headers[0], b.Image.Headers[1] = b.Image.Headers[1], b.Image.Headers[0]
	b.Spec[0], b.Spec[1] = b.Spec[1], b.Spec[0]
	b.Options.Env[0], b.Options.Env[1] = b.Options.Env[1], b.Options.Env[0]
	if a.Digests() != b.Digests() {
		t.Error("reordering headers, spec constants or env changed the digests")
	}
	if !a.Equal(b) {
		t.Error("Equal is false for reordered set-like inputs")
	}
	// Canonicalizing must not reorder the caller's slices.
	if b.Image.Headers[0].Name != "a.h" {
		t.Error("Digests reordered the caller's headers")
	}
}

// TestEveryComponentChangesDigest changes each field in turn and checks the
// whole-key digest and exactly the expected component digest change.
func TestEveryComponentChangesDigest(t *testing.T) {
	tests := []struct {
		name      string
		component func(Digests) Digest
		mutate    func(*Key)
	}{
		{"platform", dev, func(k *Key) { k.Device.Platform += "x" }},
		{"device name", dev, func(k *Key) { k.Device.Name += "x" }},
		{"device version", dev, func(k *Key) { k.Device.Version += "x" }},
		{"driver version", dev, func(k *Key) { k.Device.Driver += "x" }},
		{"compiler name", dev, func(k *Key) { k.Compiler.Name += "x" }},
		{"compiler version", dev, func(k *Key) { k.Compiler.Version += "x" }},
		{"compiler library", dev, func(k *Key) { k.Compiler.Library += "x" }},
		{"compiler size", dev, func(k *Key) { k.Compiler.LibrarySize++ }},
		{"compiler mtime", dev, func(k *Key) { k.Compiler.LibraryTime++ }},
		{"compiler files", dev, func(k *Key) { k.Compiler.Files[0]++ }},
		{"image format", img, func(k *Key) { k.Image.Format = "spirv" }},
		{"source", img, func(k *Key) { k.Image.Source = append(k.Image.Source, ' ') }},
		{"header content", img, func(k *Key) { k.Image.Headers[1] = HeaderOf(k.Image.Headers[1].Name, []byte("#define B 3")) }},
		{"header name", img, func(k *Key) { k.Image.Headers[1].Name = "c.h" }},
		{"header added", img, func(k *Key) { k.Image.Headers = append(k.Image.Headers, Header{Name: "d.h"}) }},
		{"spec value", spec, func(k *Key) { k.Spec[0].Value = []byte{2, 0, 0, 0} }},
		{"spec id", spec, func(k *Key) { k.Spec[0].ID = 8 }},
		{"spec removed", spec, func(k *Key) { k.Spec = k.Spec[:1] }},
		{"compile options", opts, func(k *Key) { k.Options.Compile += " -DM=1" }},
		{"link options", opts, func(k *Key) { k.Options.Link = "" }},
		{"env value", opts, func(k *Key) { k.Options.Env[0].Value = "1" }},
		{"env added", opts, func(k *Key) { k.Options.Env = append(k.Options.Env, EnvVar{Name: "X"}) }},
		// Field boundaries: moving a byte from one field to the next must
		// change the digest, which length prefixes guarantee.
		{"boundary", dev, func(k *Key) { k.Device.Platform += "a"; k.Device.Name = k.Device.Name[1:] }},
	}
	base := sampleKey().Digests()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := sampleKey()
			tt.mutate(k)
			d := k.Digests()
			if d.Key == base.Key {
				t.Error("key digest unchanged")
			}
			if tt.component(d) == tt.component(base) {
				t.Error("component digest unchanged")
			}
			changed := 0
			for _, c := range []func(Digests) Digest{dev, img, spec, opts} {
				if c(d) != c(base) {
					changed++
				}
			}
			if changed != 1 {
				t.Errorf("%d component digests changed, want 1", changed)
			}
		})
	}
}

func dev(d Digests) Digest  { return d.Device }
func img(d Digests) Digest  { return d.Image }
func spec(d Digests) Digest { return d.Spec }
func opts(d Digests) Digest { return d.Options }

func TestOptionOrderMatters(t *testing.T) {
	a, b := sampleKey(), sampleKey()
	a.Options.Compile = "-I a -I b"
	b.Options.Compile = "-I b -I a"
	if a.Digest() == b.Digest() {
		t.Error("option order is significant to compilers but did not change the digest")
	}
}

func TestRoundTrip(t *testing.T) {
	for _, k := range []*Key{{}, sampleKey()} {
		enc, _ := k.MarshalBinary()
		var got Key
		if err := got.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		if !got.Equal(k) || got.Digest() != k.Digest() {
			t.Errorf("round trip changed the key")
		}
		again, _ := got.MarshalBinary()
		if !bytes.Equal(again, enc) {
			t.Errorf("re-encoding differs")
		}
	}
}

func TestUnmarshalRejectsDamage(t *testing.T) {
	enc, _ := sampleKey().MarshalBinary()
	bad := map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("XCKEY"), enc[5:]...),
		"version":   append(append([]byte(keyMagic), FormatVersion+1), enc[6:]...),
		"truncated": enc[:len(enc)-1],
		"trailing":  append(bytes.Clone(enc), 0),
		"huge len":  append(append([]byte(keyMagic), FormatVersion), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
	}
	for name, b := range bad {
		var k Key
		err := k.UnmarshalBinary(b)
		if err == nil {
			t.Errorf("%s: decoded without error", name)
			continue
		}
		if !errorsIsMiss(err) {
			t.Errorf("%s: error %v is not a miss", name, err)
		}
	}
}

func FuzzUnmarshalKey(f *testing.F) {
	enc, _ := sampleKey().MarshalBinary()
	f.Add(enc)
	empty, _ := (&Key{}).MarshalBinary()
	f.Add(empty)
	f.Add([]byte("KCKEY\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var k Key
		if err := k.UnmarshalBinary(data); err != nil {
			return
		}
		// Whatever decodes must re-encode to a key that decodes equal.
		again, _ := k.MarshalBinary()
		var k2 Key
		if err := k2.UnmarshalBinary(again); err != nil {
			t.Fatalf("re-encoded key does not decode: %v", err)
		}
		if !k2.Equal(&k) {
			t.Fatal("re-encoded key differs")
		}
	})
}

func TestParseDigest(t *testing.T) {
	d := sampleKey().Digest()
	got, err := ParseDigest(d.String())
	if err != nil || got != d {
		t.Fatalf("ParseDigest(%s) = %v, %v", d, got, err)
	}
	for _, s := range []string{"", "zz", d.String()[:63], d.String() + "00"} {
		if _, err := ParseDigest(s); err == nil {
			t.Errorf("ParseDigest(%q) accepted", s)
		}
	}
}
