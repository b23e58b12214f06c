package suite

import (
	"math"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// fftStockham transforms a batch of four 1024-point complex signals with
// ten radix-2 Stockham passes (ns = 1 ... 512), ping-ponging A → B → ... → A,
// and compares with a direct O(N²) DFT in double precision, which shares no
// structure with the FFT.
//
// Tolerance: inputs are in [-1, 1), so outputs have rms magnitude
// √N·0.58 ≈ 18. A float32 radix-2 FFT has rms relative error of order
// ε·log2(N) (≈ 6e-7 here) plus twiddle error; atol 2e-3 is about 1e-4 of
// the rms magnitude, far above that and far below any structural error
// (a wrong twiddle or index moves outputs by O(10)). Only A is checked: B
// holds an intermediate pass.
func fftStockham() spec {
	const n, batch, logN = 1024, 4, 10
	r := newRand(17)
	x := uniform(r, 2*n*batch, -1, 1) // interleaved re, im
	launches := make([]Launch, logN)
	for p := range logN {
		src, dst := p%2, 1-p%2
		launches[p] = Launch{
			Kernel: "fft_radix2_pass", Global: dims(n/2, batch), Local: dims(64, 1),
			Args: args(BufferArg(src), BufferArg(dst), I32(int32(1<<p))),
		}
	}
	cs := Case{
		Name:     "fft-stockham",
		Category: "FFT",
		Source:   source("fft_stockham.cl"),
		Options:  "-DFFT_N=1024 -cl-mad-enable",
		Buffers:  []Buffer{in("A", casedata.F32Bytes(x)), out("B", 2*n*batch)},
		Launches: launches,
	}
	return newSpec(cs, expectF32(0, 0, 2e-3, func() []float64 { return dft(x, n, batch) }))
}

// dft returns the forward DFT, X[k] = Σ x[m]·exp(-2πi·k·m/N), of each of
// batch interleaved complex signals of length n.
func dft(x []float32, n, batch int) []float64 {
	cos, sin := make([]float64, n), make([]float64, n)
	for m := range n {
		cos[m], sin[m] = math.Cos(2*math.Pi*float64(m)/float64(n)), -math.Sin(2*math.Pi*float64(m)/float64(n))
	}
	out := make([]float64, len(x))
	for b := range batch {
		sig := x[2*n*b : 2*n*(b+1)]
		res := out[2*n*b : 2*n*(b+1)]
		for k := range n {
			var re, im float64
			for m := range n {
				c, s := cos[k*m%n], sin[k*m%n]
				xr, xi := float64(sig[2*m]), float64(sig[2*m+1])
				re += xr*c - xi*s
				im += xr*s + xi*c
			}
			res[2*k], res[2*k+1] = re, im
		}
	}
	return out
}
