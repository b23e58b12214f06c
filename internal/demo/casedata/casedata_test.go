package casedata

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestCompareF32(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name       string
		got        []float32
		want       []float64
		rtol, atol float64
		err        string // "" for a pass, else a part of the error
	}{
		{"equal", []float32{1, -2, 0}, []float64{1, -2, 0}, 0, 0, ""},
		{"within atol near zero", []float32{1e-6}, []float64{0}, 0, 1e-5, ""},
		{"within rtol at magnitude", []float32{1000.5}, []float64{1000}, 1e-3, 0, ""},
		{"just outside", []float32{1.01}, []float64{1}, 1e-3, 1e-3, "1 of 1 elements off; first [0] = 1.01, want 1"},
		{"counts and names the first", []float32{0, 5, 1, 7}, []float64{0, 1, 1, 1}, 0, 0.5, "2 of 4 elements off; first [1] = 5"},
		{"NaN never passes", []float32{nan}, []float64{0}, 1, 1, "1 of 1 elements off"},
		{"length", []float32{1, 2}, []float64{1}, 0, 0, "8 bytes, want 1 float32"},
	} {
		err := CompareF32(F32Bytes(tc.got), tc.want, tc.rtol, tc.atol)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestCompareExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"u32 equal", CompareU32(U32Bytes([]uint32{1, 2}), []uint32{1, 2}), ""},
		{"u32 differ", CompareU32(U32Bytes([]uint32{1, 3, 4}), []uint32{1, 2, 5}), "2 of 3 elements differ; first [1] = 3, want 2"},
		{"u32 length", CompareU32([]byte{1, 2, 3}, []uint32{1}), "3 bytes, want 1 uint32"},
		{"u8 equal", CompareU8([]byte{1, 2}, []byte{1, 2}), ""},
		{"u8 differ", CompareU8([]byte{1, 9}, []byte{1, 2}), "1 of 2 bytes differ; first [1] = 9, want 2"},
		{"u8 length", CompareU8([]byte{1}, []byte{1, 2}), "1 bytes, want 2"},
	} {
		if tc.want == "" && tc.err != nil || tc.want != "" && (tc.err == nil || tc.err.Error() != tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}

// TestWords checks the encodings against bytes written out by hand, and
// that decoding undoes them.
func TestWords(t *testing.T) {
	if got := F32Bytes([]float32{1, -2}); !slices.Equal(got, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}) {
		t.Errorf("F32Bytes = % x", got)
	}
	if got := I32Bytes([]int32{-1, 258}); !slices.Equal(got, []byte{0xff, 0xff, 0xff, 0xff, 2, 1, 0, 0}) {
		t.Errorf("I32Bytes = % x", got)
	}
	if got := U32Bytes([]uint32{0x01020304}); !slices.Equal(got, []byte{4, 3, 2, 1}) {
		t.Errorf("U32Bytes = % x", got)
	}
	f := []float32{0, 1.5, float32(math.Inf(-1)), math.MaxFloat32}
	if got := F32s(append(F32Bytes(f), 7)); !slices.Equal(got, f) {
		t.Errorf("F32s(F32Bytes(%v) + a stray byte) = %v", f, got)
	}
	i := []int32{math.MinInt32, -5, 0, math.MaxInt32}
	if got := I32s(I32Bytes(i)); !slices.Equal(got, i) {
		t.Errorf("I32s(I32Bytes(%v)) = %v", i, got)
	}
	u := []uint32{0, 1, math.MaxUint32}
	if got := U32s(U32Bytes(u)); !slices.Equal(got, u) {
		t.Errorf("U32s(U32Bytes(%v)) = %v", u, got)
	}
}

func TestCheckOutputs(t *testing.T) {
	bufs := []Buffer{{Name: "a", Size: 4}, {Name: "b", Size: 4}}
	if err := CheckOutputs(make([][]byte, 2), bufs); err != nil {
		t.Error(err)
	}
	if err := CheckOutputs(make([][]byte, 1), bufs); err == nil || err.Error() != "1 output buffers, want 2" {
		t.Errorf("one buffer short: %v", err)
	}
}

func TestWriteHeaders(t *testing.T) {
	dir := t.TempDir()
	if err := WriteHeaders(dir, map[string]string{"a.h": "#define A 1\n", "b.h": "#define B 2\n"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "b.h")); err != nil || string(b) != "#define B 2\n" {
		t.Errorf("b.h: %q, %v", b, err)
	}
	err := WriteHeaders(filepath.Join(dir, "missing"), map[string]string{"a.h": ""})
	if err == nil || !strings.HasPrefix(err.Error(), "write header: ") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("into a missing directory: %v", err)
	}
}

func TestDistinct(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, nil},
		{[]string{"a"}, []string{"a"}},
		{[]string{"b", "a", "b", "c", "a"}, []string{"b", "a", "c"}},
	} {
		if got := Distinct(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Distinct(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestMustRead(t *testing.T) {
	fsys := fstest.MapFS{"kernels/a.cl": {Data: []byte("kernel")}}
	if got := MustRead(fsys, "kernels/a.cl"); got != "kernel" {
		t.Errorf("MustRead = %q", got)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "kernels/b.cl") {
			t.Errorf("a missing source: panic %v, want one naming it", r)
		}
	}()
	MustRead(fsys, "kernels/b.cl")
}
