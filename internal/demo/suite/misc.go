package suite

import (
	"math"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// Simulation, ML and finance kernels: n-body, Mandelbrot, softmax,
// layer norm, Black-Scholes, stream compaction.

// nbody takes two steps of a 500-body system (not a multiple of the
// 64-body tile) in a unit cube, total mass 1, softening 0.1, dt 0.01:
// (A) → (B) → (A). Both states are checked.
//
// Tolerance: an acceleration sums 500 terms, each at most
// m·0.385/eps² ≈ 0.12 in magnitude, so its float32 error is below
// 500·ε·Σ|term| ≈ 2e-3 even in the worst case and far smaller in practice;
// times dt that is 2e-5 in a velocity. Positions and velocities are O(1):
// atol 1e-5 plus rtol 1e-5 (the typical error is ~1e-7).
func nbody() spec {
	const n, wg, steps = 500, 64, 2
	const dt, eps2 = float32(0.01), float32(0.01)
	r := newRand(22)
	pos := make([]float32, 4*n)
	vel := make([]float32, 4*n)
	for i := range n {
		pos[4*i], pos[4*i+1], pos[4*i+2] = 2*r.Float32()-1, 2*r.Float32()-1, 2*r.Float32()-1
		pos[4*i+3] = (0.5 + r.Float32()) / n
		vel[4*i], vel[4*i+1], vel[4*i+2] = 0.2*r.Float32()-0.1, 0.2*r.Float32()-0.1, 0.2*r.Float32()-0.1
	}
	launches := make([]Launch, steps)
	for s := range steps {
		src, dst := 2*(s%2), 2*(1-s%2) // position buffer; velocity follows at +1
		launches[s] = Launch{
			Kernel: "nbody_step", Global: dims(roundUp(n, wg)), Local: dims(wg),
			Args: args(BufferArg(src), BufferArg(src+1), BufferArg(dst), BufferArg(dst+1), I32(n), F32(dt), F32(eps2)),
		}
	}
	cs := Case{
		Name:     "nbody",
		Category: "simulation",
		Source:   source("nbody.cl"),
		Options:  "-DWG=64 -cl-mad-enable",
		Buffers: []Buffer{
			in("pos_a", casedata.F32Bytes(pos)), in("vel_a", casedata.F32Bytes(vel)), out("pos_b", 4*n), out("vel_b", 4*n),
		},
		Launches: launches,
	}
	// state returns positions and velocities after k steps.
	state := func(k int) (p, v []float64) {
		p, v = widen(pos), widen(vel)
		for range k {
			np, nv := make([]float64, 4*n), make([]float64, 4*n)
			for i := range n {
				var a [3]float64
				for j := range n {
					var d [3]float64
					r2 := float64(eps2)
					for c := range 3 {
						d[c] = p[4*j+c] - p[4*i+c]
						r2 += d[c] * d[c]
					}
					s := p[4*j+3] / (r2 * math.Sqrt(r2))
					for c := range 3 {
						a[c] += s * d[c]
					}
				}
				for c := range 3 {
					nv[4*i+c] = v[4*i+c] + a[c]*float64(dt)
					np[4*i+c] = p[4*i+c] + nv[4*i+c]*float64(dt)
				}
				nv[4*i+3], np[4*i+3] = v[4*i+3], p[4*i+3]
			}
			p, v = np, nv
		}
		return p, v
	}
	return newSpec(cs,
		expectF32(0, 1e-5, 1e-5, func() []float64 { p, _ := state(2); return p }),
		expectF32(1, 1e-5, 1e-5, func() []float64 { _, v := state(2); return v }),
		expectF32(2, 1e-5, 1e-5, func() []float64 { p, _ := state(1); return p }),
		expectF32(3, 1e-5, 1e-5, func() []float64 { _, v := state(1); return v }))
}

// mandelbrot renders escape counts (at most 256) on a 160 x 120 grid over
// [-2.2, 0.8] x [-1.2, 1.2]. The kernel disables FMA contraction and the
// reference repeats its float32 operations in the same order, each rounded
// (Go rounds every float32 operation; the explicit conversions also forbid
// fusing), so the counts must match exactly.
func mandelbrot() spec {
	const w, h, maxIter = 160, 120, 256
	const x0, y0 = float32(-2.2), float32(-1.2)
	const dx, dy = float32(3.0 / w), float32(2.4 / h)
	cs := Case{
		Name:     "mandelbrot",
		Category: "fractal",
		Source:   source("mandelbrot.cl"),
		Options:  "-DMAX_ITER=256",
		Buffers:  []Buffer{out("iters", w*h)},
		Launches: []Launch{{
			Kernel: "mandelbrot", Global: dims(w, h), Local: dims(16, 4),
			Args: args(BufferArg(0), I32(w), I32(h), F32(x0), F32(y0), F32(dx), F32(dy)),
		}},
	}
	return newSpec(cs, expectU32(0, func() []uint32 {
		iters := make([]uint32, w*h)
		for py := range h {
			for px := range w {
				iters[py*w+px] = escape(x0+float32(float32(px)*dx), y0+float32(float32(py)*dy), maxIter)
			}
		}
		return iters
	}))
}

// escape iterates z ← z² + c in float32 exactly as mandelbrot.cl does.
func escape(cx, cy float32, maxIter uint32) uint32 {
	var zx, zy float32
	n := uint32(0)
	for n < maxIter {
		zx2, zy2 := float32(zx*zx), float32(zy*zy)
		if float32(zx2+zy2) > 4 {
			break
		}
		zy = float32(float32(2*zx)*zy) + cy
		zx = float32(zx2-zy2) + cx
		n++
	}
	return n
}

// softmaxRows normalises 64 rows of 500 logits in [-8, 8).
//
// Tolerance: exp is accurate to a few ulps and the row sum has ~15
// roundings of positive terms, so every output is within ~20ε ≈ 1.2e-6
// relative; rtol 1e-5. atol 1e-10 only covers outputs that underflow.
func softmaxRows() spec {
	const rows, cols, wg = 64, 500, 64
	r := newRand(23)
	x := uniform(r, rows*cols, -8, 8)
	cs := Case{
		Name:     "softmax-rows",
		Category: "machine learning",
		Source:   source("softmax.cl"),
		Options:  "-DWG=64",
		Headers:  commonHeaders(),
		Buffers:  []Buffer{in("x", casedata.F32Bytes(x)), out("y", rows*cols)},
		Launches: []Launch{{
			Kernel: "softmax_rows", Global: dims(rows * wg), Local: dims(wg),
			Args: args(BufferArg(0), BufferArg(1), I32(cols)),
		}},
	}
	return newSpec(cs, expectF32(1, 1e-5, 1e-10, func() []float64 {
		y := make([]float64, rows*cols)
		for i := range rows {
			row := widen(x[i*cols : (i+1)*cols])
			m := math.Inf(-1)
			for _, v := range row {
				m = max(m, v)
			}
			var s float64
			for _, v := range row {
				s += math.Exp(v - m)
			}
			for j, v := range row {
				y[i*cols+j] = math.Exp(v-m) / s
			}
		}
		return y
	}))
}

// layerNorm normalises 48 rows of 768 features (a transformer width) whose
// means are offset per row, with random gamma and beta, eps 1e-5; y, the
// row means and the reciprocal standard deviations are all checked.
//
// Tolerance: a row sum of 768 values ≈ 3 accumulates ~20 roundings
// (12 serial, 6 tree): relative 1e-6, so mean and rstd pass rtol 1e-5;
// y = (x - mean)·rstd·gamma + beta is O(3) and inherits an absolute
// error of ~1e-6 from the mean: atol 1e-5.
func layerNorm() spec {
	const rows, cols, wg = 48, 768, 64
	const eps = float32(1e-5)
	r := newRand(24)
	x := make([]float32, rows*cols)
	for i := range rows {
		offset, scale := 4*r.Float32()-2, 0.5+2*r.Float32()
		for j := range cols {
			x[i*cols+j] = offset + scale*(2*r.Float32()-1)
		}
	}
	gamma := uniform(r, cols, 0.5, 1.5)
	beta := uniform(r, cols, -0.5, 0.5)
	cs := Case{
		Name:     "layernorm",
		Category: "machine learning",
		Source:   source("layernorm.cl"),
		Options:  "-DWG=64",
		Headers:  commonHeaders(),
		Buffers: []Buffer{
			in("x", casedata.F32Bytes(x)), in("gamma", casedata.F32Bytes(gamma)), in("beta", casedata.F32Bytes(beta)),
			out("y", rows*cols), out("mean", rows), out("rstd", rows),
		},
		Launches: []Launch{{
			Kernel: "layernorm_fwd", Global: dims(rows * wg), Local: dims(wg),
			Args: args(BufferArg(0), BufferArg(1), BufferArg(2), BufferArg(3), BufferArg(4), BufferArg(5),
				I32(cols), F32(eps), LocalArg(4*wg)),
		}},
	}
	// stats returns each row's mean and 1/sqrt(var + eps).
	stats := func() (mean, rstd []float64) {
		mean, rstd = make([]float64, rows), make([]float64, rows)
		for i := range rows {
			row := widen(x[i*cols : (i+1)*cols])
			for _, v := range row {
				mean[i] += v
			}
			mean[i] /= cols
			var ss float64
			for _, v := range row {
				ss += (v - mean[i]) * (v - mean[i])
			}
			rstd[i] = 1 / math.Sqrt(ss/cols+float64(eps))
		}
		return mean, rstd
	}
	y := func() []float64 {
		mean, rstd := stats()
		y := make([]float64, rows*cols)
		for i := range rows {
			for j := range cols {
				y[i*cols+j] = (float64(x[i*cols+j])-mean[i])*rstd[i]*float64(gamma[j]) + float64(beta[j])
			}
		}
		return y
	}
	return newSpec(cs,
		expectF32(3, 1e-5, 1e-5, y),
		expectF32(4, 1e-5, 1e-6, func() []float64 { m, _ := stats(); return m }),
		expectF32(5, 1e-5, 0, func() []float64 { _, s := stats(); return s }))
}

// blackScholes prices 10000 European calls and puts (spot 5-30, strike
// 1-100, 0.25-10 years, r 2%, sigma 30%) against closed forms with the
// exact normal CDF (via erfc) in double precision.
//
// Tolerance: prices reach ~100. float32 rounding in the products and in
// exp/log contributes ~1e-5, the A&S CDF approximation at most
// 7.5e-8·(S + K) ≈ 1e-5, and the sensitivity of the price to d1, d2
// (≤ S·φ ≈ 12) times their rounding error a few 1e-6: atol 5e-4, about
// ten times the sum, still a tiny fraction of a cent on these prices.
func blackScholes() spec {
	const n, wg = 10000, 64
	const rate, sigma = float32(0.02), float32(0.30)
	r := newRand(25)
	spot := uniform(r, n, 5, 30)
	strike := uniform(r, n, 1, 100)
	years := uniform(r, n, 0.25, 10)
	cs := Case{
		Name:     "black-scholes",
		Category: "finance",
		Source:   source("black_scholes.cl"),
		Buffers: []Buffer{
			in("spot", casedata.F32Bytes(spot)), in("strike", casedata.F32Bytes(strike)), in("years", casedata.F32Bytes(years)),
			out("call", n), out("put", n),
		},
		Launches: []Launch{{
			Kernel: "black_scholes", Global: dims(roundUp(n/4, wg)), Local: dims(wg),
			Args: args(BufferArg(0), BufferArg(1), BufferArg(2), BufferArg(3), BufferArg(4),
				I32(n/4), F32(rate), F32(sigma)),
		}},
	}
	prices := func() (call, put []float64) {
		call, put = make([]float64, n), make([]float64, n)
		cdf := func(d float64) float64 { return 0.5 * math.Erfc(-d/math.Sqrt2) }
		rr, sg := float64(rate), float64(sigma)
		for i := range n {
			s, k, t := float64(spot[i]), float64(strike[i]), float64(years[i])
			d1 := (math.Log(s/k) + (rr+sg*sg/2)*t) / (sg * math.Sqrt(t))
			d2 := d1 - sg*math.Sqrt(t)
			disc := k * math.Exp(-rr*t)
			call[i] = s*cdf(d1) - disc*cdf(d2)
			put[i] = disc*cdf(-d2) - s*cdf(-d1)
		}
		return call, put
	}
	return newSpec(cs,
		expectF32(3, 1e-5, 5e-4, func() []float64 { c, _ := prices(); return c }),
		expectF32(4, 1e-5, 5e-4, func() []float64 { _, p := prices(); return p }))
}

// streamCompaction keeps the values above 0.25 among 6000 in [-1, 1)
// (about 37%), preserving order. Values only move, so the packed output
// (zero past the count) and all the bookkeeping buffers must match exactly.
func streamCompaction() spec {
	const n, wg = 6000, 64
	const groups = (n + wg - 1) / wg
	const threshold = float32(0.25)
	r := newRand(26)
	x := uniform(r, n, -1, 1)
	cs := Case{
		Name:     "stream-compaction",
		Category: "scan",
		Source:   source("compact.cl"),
		Options:  "-DWG=64",
		Headers:  commonHeaders(),
		Buffers: []Buffer{
			in("in", casedata.F32Bytes(x)), out("slot", n), out("group_counts", groups), out("group_base", groups),
			out("total", 1), out("out", n),
		},
		Launches: []Launch{
			{Kernel: "compact_mark", Global: dims(groups * wg), Local: dims(wg),
				Args: args(BufferArg(0), BufferArg(1), BufferArg(2), U32(n), F32(threshold))},
			{Kernel: "compact_offsets", Global: dims(wg), Local: dims(wg),
				Args: args(BufferArg(2), BufferArg(3), BufferArg(4), U32(groups))},
			{Kernel: "compact_scatter", Global: dims(groups * wg), Local: nil,
				Args: args(BufferArg(0), BufferArg(1), BufferArg(3), BufferArg(5), U32(n), F32(threshold))},
		},
	}
	slots := func() []uint32 {
		s := make([]uint32, n)
		var run uint32
		for i, v := range x {
			if i%wg == 0 {
				run = 0
			}
			s[i] = run
			if v > threshold {
				run++
			}
		}
		return s
	}
	counts := func() []uint32 {
		c := make([]uint32, groups)
		for i, v := range x {
			if v > threshold {
				c[i/wg]++
			}
		}
		return c
	}
	kept := func() []float32 {
		var k []float32
		for _, v := range x {
			if v > threshold {
				k = append(k, v)
			}
		}
		return k
	}
	return newSpec(cs,
		expectU32(1, slots),
		expectU32(2, counts),
		expectU32(3, func() []uint32 { return exclusiveScan(counts()) }),
		expectU32(4, func() []uint32 { return []uint32{uint32(len(kept()))} }),
		expectU32(5, func() []uint32 { return floatBits(append(kept(), make([]float32, n-len(kept()))...)) }))
}
