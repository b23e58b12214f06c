package casedata

import (
	"encoding/binary"
	"fmt"
	"math"
)

// CompareF32 checks got, float32 words, against want element by element:
// an element passes where |got - want| <= atol + rtol*|want| (the usual
// mixed test: atol covers results near zero, where a relative bound means
// nothing, and rtol scales with magnitude). NaN never passes. The error
// counts the elements off and names the first.
func CompareF32(got []byte, want []float64, rtol, atol float64) error {
	if len(got) != 4*len(want) {
		return fmt.Errorf("%d bytes, want %d float32", len(got), len(want))
	}
	bad, first := 0, -1
	var worst float64
	for i, w := range want {
		g := float64(math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])))
		diff := math.Abs(g - w)
		// !(diff <= tol) also rejects NaN, which compares false with everything.
		if !(diff <= atol+rtol*math.Abs(w)) {
			if first < 0 {
				first = i
			}
			bad++
		}
		worst = max(worst, diff)
	}
	if bad > 0 {
		g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*first:]))
		return fmt.Errorf("%d of %d elements off; first [%d] = %g, want %g (atol %g, rtol %g; largest |error| %g)",
			bad, len(want), first, g, want[first], atol, rtol, worst)
	}
	return nil
}

// CompareU32 checks got, 32-bit words, exactly against want.
func CompareU32(got []byte, want []uint32) error {
	if len(got) != 4*len(want) {
		return fmt.Errorf("%d bytes, want %d uint32", len(got), len(want))
	}
	bad, first := 0, -1
	for i, w := range want {
		if binary.LittleEndian.Uint32(got[4*i:]) != w {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d elements differ; first [%d] = %d, want %d",
			bad, len(want), first, binary.LittleEndian.Uint32(got[4*first:]), want[first])
	}
	return nil
}

// CompareU8 checks got byte for byte against want.
func CompareU8(got, want []byte) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d bytes, want %d", len(got), len(want))
	}
	bad, first := 0, -1
	for i := range want {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d bytes differ; first [%d] = %d, want %d", bad, len(want), first, got[first], want[first])
	}
	return nil
}
