package cudasuite

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
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

func f32b(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bf32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func i32b(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func bi32(b []byte) []int32 {
	v := make([]int32, len(b)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func bu32(b []byte) []uint32 {
	v := make([]uint32, len(b)/4)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return v
}

// closeTo checks got against want element by element, within a relative
// tolerance (absolute near zero); NaN never passes.
func closeTo(what string, got []float32, want []float64, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		if math.IsNaN(float64(g)) || math.Abs(float64(g)-w) > tol*(1+math.Abs(w)) {
			return fmt.Errorf("%s[%d] = %v, want %v (tolerance %g)", what, i, g, w, tol)
		}
	}
	return nil
}

// lazy computes a reference once, on first use.
func lazy[T any](f func() T) func() T { return sync.OnceValue(f) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }
