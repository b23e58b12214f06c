package cuda

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

func TestPackArgs(t *testing.T) {
	slab, offs, err := packArgs([]any{DevicePtr(0x1122334455667788), int32(-2), float32(1.5), uint64(7), []byte{1, 2, 3}, float64(2.25), uint32(9), int64(-3)})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 8, 16, 24, 32, 40, 48, 56}
	for i, o := range offs {
		if o != want[i] {
			t.Fatalf("offsets %v, want %v (each argument aligned to 8)", offs, want)
		}
	}
	le := binary.LittleEndian
	switch {
	case le.Uint64(slab[0:]) != 0x1122334455667788,
		int32(le.Uint32(slab[8:])) != -2,
		math.Float32frombits(le.Uint32(slab[16:])) != 1.5,
		le.Uint64(slab[24:]) != 7,
		!bytes.Equal(slab[32:35], []byte{1, 2, 3}),
		math.Float64frombits(le.Uint64(slab[40:])) != 2.25,
		le.Uint32(slab[48:]) != 9,
		int64(le.Uint64(slab[56:])) != -3:
		t.Fatalf("slab % x", slab)
	}
	if _, _, err := packArgs([]any{"no"}); err == nil {
		t.Error("a string argument was accepted")
	}
	if _, _, err := packArgs([]any{[]byte{}}); err == nil {
		t.Error("an empty []byte argument was accepted")
	}
}

func TestDim(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want Dim3
	}{{nil, Dim3{1, 1, 1}}, {[]int{256}, Dim3{256, 1, 1}}, {[]int{4, 5}, Dim3{4, 5, 1}}, {[]int{2, 3, 4}, Dim3{2, 3, 4}}} {
		if got := Dim(tc.in...); got != tc.want {
			t.Errorf("Dim(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
