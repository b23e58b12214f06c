package suite

import "math/rand/v2"

// newRand returns the generator for one case. Each case has its own seed so
// that adding or reordering cases never changes another case's inputs.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x6b63616368650001))
}

// uniform returns n floats drawn uniformly from [lo, hi).
func uniform(r *rand.Rand, n int, lo, hi float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = lo + (hi-lo)*r.Float32()
	}
	return v
}

// roundUp rounds n up to a multiple of m, for global sizes.
func roundUp(n, m int) int { return (n + m - 1) / m * m }

// out returns a zero-filled output buffer of n 4-byte elements.
func out(name string, n int) Buffer { return Buffer{Name: name, Size: 4 * n} }

// in returns an input buffer holding b.
func in(name string, b []byte) Buffer { return Buffer{Name: name, Init: b, Size: len(b)} }

// args builds an argument list.
func args(a ...Arg) []Arg { return a }

// dims builds a work size.
func dims(d ...int) []int { return d }
