package cudasuite

import (
	"fmt"
	"sync"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// rng is a small deterministic generator (xorshift64*), so inputs are the
// same on every run and machine.
type rng uint64

func newRNG(seed uint64) *rng { r := rng(seed*0x9E3779B97F4A7C15 + 1); return &r }

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return x * 0x2545F4914F6CDD1D
}

// float returns a float32 in [lo, hi).
func (r *rng) float(lo, hi float32) float32 {
	return lo + (hi-lo)*float32(r.next()>>40)/float32(1<<24)
}

func (r *rng) floats(n int, lo, hi float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.float(lo, hi)
	}
	return v
}

// closeTo checks got, float32 words, against want element by element,
// within tol relative to want's magnitude and tol absolute (which covers
// results near zero): casedata.CompareF32. NaN never passes.
func closeTo(what string, got []byte, want []float64, tol float64) error {
	if err := casedata.CompareF32(got, want, tol, tol); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// exactly checks got, 32-bit words, against want, which they must match.
func exactly(what string, got []byte, want []uint32) error {
	if err := casedata.CompareU32(got, want); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// buf is a buffer of size bytes, holding init or zeros where init is nil.
func buf(name string, init []byte, size int) Buffer {
	return Buffer{Name: name, Init: init, Size: size}
}

// lazy computes a reference once, on first use.
func lazy[T any](f func() T) func() T { return sync.OnceValue(f) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }
