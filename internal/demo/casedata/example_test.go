package casedata_test

import (
	"fmt"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// A run's output buffer checked against a reference computed in double
// precision: the third element is off by more than the tolerance.
func ExampleCompareF32() {
	out := casedata.F32Bytes([]float32{1, 2.0001, 3.5})
	want := []float64{1, 2, 3}
	fmt.Println(casedata.CompareF32(out, want, 1e-3, 1e-6))
	// Output: 1 of 3 elements off; first [2] = 3.5, want 3 (atol 1e-06, rtol 0.001; largest |error| 0.5)
}
