package suite

import "github.com/kcache/kcache/internal/demo/casedata"

// Dense linear algebra: GEMM (naive and tiled), GEMV, transpose, AXPY.

// gemmRef returns alpha*A*B + beta*C (row-major, M x K times K x N) in
// double precision.
func gemmRef(m, n, k int, alpha float64, a, b []float32, beta float64, c []float32) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var acc float64
			for p := range k {
				acc += float64(a[i*k+p]) * float64(b[p*n+j])
			}
			out[i*n+j] = alpha*acc + beta*float64(c[i*n+j])
		}
	}
	return out
}

// gemmCase builds a GEMM case; the two SGEMM kernels share arguments.
//
// Tolerance: each element is a float32 dot product of length K of values
// in [-1, 1). The classic bound on its rounding error is K·ε·Σ|a·b| with
// ε = 2^-24 ≈ 6e-8; for K ≈ 100 and Σ|a·b| ≈ K/4 that is 1.5e-4, times
// |alpha| 1.5. atol 1e-3 sits above it; any indexing error shifts results
// by O(1).
func gemmCase(name, kernel, file, options string, seed uint64, m, n, k int, global, local []int) spec {
	r := newRand(seed)
	a := uniform(r, m*k, -1, 1)
	b := uniform(r, k*n, -1, 1)
	c := uniform(r, m*n, -1, 1)
	const alpha, beta = 1.5, -0.5
	cs := Case{
		Name:     name,
		Category: "dense linear algebra",
		Source:   source(file),
		Options:  options,
		Buffers:  []Buffer{in("A", casedata.F32Bytes(a)), in("B", casedata.F32Bytes(b)), in("C", casedata.F32Bytes(c))},
		Launches: []Launch{{
			Kernel: kernel, Global: global, Local: local,
			Args: args(I32(int32(m)), I32(int32(n)), I32(int32(k)), F32(alpha),
				BufferArg(0), BufferArg(1), F32(beta), BufferArg(2)),
		}},
	}
	return newSpec(cs, expectF32(2, 1e-5, 1e-3, func() []float64 { return gemmRef(m, n, k, alpha, a, b, beta, c) }))
}

func sgemmNaive() spec {
	// Non-square sizes catch swapped indices; nil local lets the runtime pick.
	return gemmCase("sgemm-naive", "sgemm_naive", "sgemm_naive.cl", "-cl-mad-enable", 1,
		64, 48, 80, dims(48, 64), nil)
}

func sgemmTiled() spec {
	// TILE 8: an 8x8 = 64-item group, the largest square tile within the
	// suite's 64-item limit. K = 100 is not a multiple of 8, exercising the
	// zero-padded last tile.
	return gemmCase("sgemm-tiled", "sgemm_tiled", "sgemm_tiled.cl", "-DTILE=8 -cl-mad-enable", 2,
		96, 80, 100, dims(80, 96), dims(8, 8))
}

// sgemv: one 64-item work-group per row. N = 301 is not a multiple of 4,
// exercising the scalar tail after the float4 loop. Tolerance as for GEMM
// (length-301 dot products: bound 301·ε·75·0.75 ≈ 1e-3, and the typical
// error is far smaller); results are O(10).
func sgemv() spec {
	const m, n, wg = 128, 301, 64
	r := newRand(3)
	a := uniform(r, m*n, -1, 1)
	x := uniform(r, n, -1, 1)
	y := uniform(r, m, -1, 1)
	const alpha, beta = 0.75, 2.0
	cs := Case{
		Name:     "sgemv",
		Category: "dense linear algebra",
		Source:   source("sgemv.cl"),
		Options:  "-DWG=64",
		Headers:  commonHeaders(),
		Buffers:  []Buffer{in("A", casedata.F32Bytes(a)), in("x", casedata.F32Bytes(x)), in("y", casedata.F32Bytes(y))},
		Launches: []Launch{{
			Kernel: "sgemv_rows", Global: dims(m * wg), Local: dims(wg),
			Args: args(I32(m), I32(n), F32(alpha), BufferArg(0), BufferArg(1), F32(beta), BufferArg(2)),
		}},
	}
	return newSpec(cs, expectF32(2, 1e-5, 2e-3, func() []float64 { return gemmRef(m, 1, n, alpha, a, x, beta, y) }))
}

// transposeTiled moves floats without arithmetic, so the output must match
// bit for bit. 100 x 76 is not a multiple of the 8x8 tile, exercising the
// edge guards.
func transposeTiled() spec {
	const rows, cols, tile = 100, 76, 8
	r := newRand(4)
	src := uniform(r, rows*cols, -100, 100)
	cs := Case{
		Name:     "transpose-tiled",
		Category: "dense linear algebra",
		Source:   source("transpose.cl"),
		Options:  "-DTILE=8",
		Buffers:  []Buffer{in("in", casedata.F32Bytes(src)), out("out", rows*cols)},
		Launches: []Launch{{
			Kernel: "transpose_tiled", Global: dims(roundUp(cols, tile), roundUp(rows, tile)), Local: dims(tile, tile),
			Args: args(BufferArg(0), BufferArg(1), I32(rows), I32(cols)),
		}},
	}
	return newSpec(cs, expectU32(1, func() []uint32 {
		t := make([]float32, rows*cols)
		for i := range rows {
			for j := range cols {
				t[j*rows+i] = src[i*cols+j]
			}
		}
		return floatBits(t)
	}))
}

// axpyVec4 runs y = a*x + y as float4 plus a scalar tail (n = 10003 leaves
// three), then z = x .* y. Each output is one or two roundings away from
// the exact value: rtol 1e-6 is eight float32 ulps, and atol 1e-6 covers
// results that cancel to near zero (their error is relative to |a·x|+|y| ≤ 2).
func axpyVec4() spec {
	const n, wg = 10003, 64
	const a = -1.25
	r := newRand(5)
	x := uniform(r, n, -1, 1)
	y := uniform(r, n, -1, 1)
	n4 := n / 4
	cs := Case{
		Name:     "axpy-vec4",
		Category: "dense linear algebra",
		Source:   source("axpy.cl"),
		Buffers:  []Buffer{in("x", casedata.F32Bytes(x)), in("y", casedata.F32Bytes(y)), out("z", n)},
		Launches: []Launch{
			{Kernel: "axpy4", Global: dims(roundUp(n4, wg)), Local: dims(wg),
				Args: args(I32(int32(n4)), F32(a), BufferArg(0), BufferArg(1))},
			{Kernel: "axpy_tail", Global: dims(4), Local: nil,
				Args: args(I32(int32(4*n4)), I32(n), F32(a), BufferArg(0), BufferArg(1))},
			{Kernel: "hadamard", Global: dims(roundUp((n+3)/4, wg)), Local: dims(wg),
				Args: args(I32(n), BufferArg(0), BufferArg(1), BufferArg(2))},
		},
	}
	yRef := func() []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = a*float64(x[i]) + float64(y[i])
		}
		return out
	}
	zRef := func() []float64 {
		out := yRef()
		for i := range out {
			out[i] *= float64(x[i])
		}
		return out
	}
	return newSpec(cs, expectF32(1, 1e-6, 1e-6, yRef), expectF32(2, 1e-6, 1e-6, zRef))
}
