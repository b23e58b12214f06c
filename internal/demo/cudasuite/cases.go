package cudasuite

import (
	"fmt"
	"math"
	"math/cmplx"
	"slices"

	"github.com/kcache/kcache/cuda"
	"github.com/kcache/kcache/internal/demo/casedata"
)

func sgemmCase() Case {
	const m, n, k, tile = 256, 192, 320, 16
	r := newRNG(1)
	a, b, c0 := r.floats(m*k, -1, 1), r.floats(k*n, -1, 1), r.floats(m*n, -1, 1)
	const alpha, beta = 1.5, -0.5
	ref := lazy(func() []float64 {
		out := make([]float64, m*n)
		for i := range m {
			for j := range n {
				s := 0.0
				for p := range k {
					s += float64(a[i*k+p]) * float64(b[p*n+j])
				}
				out[i*n+j] = alpha*s + beta*float64(c0[i*n+j])
			}
		}
		return out
	})
	expr := fmt.Sprintf("sgemm_tiled<%d>", tile)
	return Case{
		Name: "sgemm-tiled", Category: "dense linear algebra", File: "sgemm.cu", Source: source("sgemm.cu"),
		Options: []string{"-std=c++17"}, NameExpressions: []string{expr, "sgemm_tiled<32>"},
		Buffers: []Buffer{buf("A", casedata.F32Bytes(a), 4*m*k), buf("B", casedata.F32Bytes(b), 4*k*n), buf("C", casedata.F32Bytes(c0), 4*m*n)},
		Launches: []Launch{{Kernel: expr, Grid: cuda.Dim(ceilDiv(n, tile), ceilDiv(m, tile)), Block: cuda.Dim(tile, tile),
			Args: []Arg{I32(m), I32(n), I32(k), F32(alpha), Buf(0), Buf(1), F32(beta), Buf(2)}}},
		Check:   func(out [][]byte) error { return closeTo("C", out[2], ref(), 1e-4) },
		prepare: func() { ref() },
	}
}

func reduceCase() Case {
	const n, block, blocks = 1 << 20, 256, 240
	r := newRNG(2)
	x := r.floats(n, 0, 1)
	ref := lazy(func() []float64 {
		s := 0.0
		for _, v := range x {
			s += float64(v)
		}
		return []float64{s}
	})
	expr := fmt.Sprintf("reduce_sum<float, %d>", block)
	return Case{
		Name: "reduce-sum", Category: "reduction", File: "reduce.cu", Source: source("reduce.cu"),
		Options: []string{"-std=c++17"}, Headers: commonHeaders(), NameExpressions: []string{expr, "reduce_sum<double, 256>", "reduce_sum<int, 512>"},
		Buffers: []Buffer{buf("x", casedata.F32Bytes(x), 4*n), buf("partials", nil, 4*blocks), buf("total", nil, 4)},
		Launches: []Launch{
			{Kernel: expr, Grid: cuda.Dim(blocks), Block: cuda.Dim(block), Args: []Arg{Buf(0), Buf(1), I32(n)}},
			{Kernel: expr, Grid: cuda.Dim(1), Block: cuda.Dim(block), Args: []Arg{Buf(1), Buf(2), I32(blocks)}},
		},
		Check:   func(out [][]byte) error { return closeTo("sum", out[2], ref(), 1e-5) },
		prepare: func() { ref() },
	}
}

func scanCase() Case {
	const n, block = 100000, 256
	nb := ceilDiv(n, block)
	r := newRNG(3)
	in := make([]int32, n)
	for i := range in {
		in[i] = int32(r.next()%201) - 100
	}
	ref := lazy(func() []int32 {
		out := make([]int32, n)
		var s int32
		for i, v := range in {
			s += v
			out[i] = s
		}
		return out
	})
	return Case{
		Name: "scan-inclusive", Category: "scan", File: "scan.cu", Source: source("scan.cu"),
		Buffers: []Buffer{buf("in", casedata.I32Bytes(in), 4*n), buf("out", nil, 4*n), buf("sums", nil, 4*nb)},
		Launches: []Launch{
			{Kernel: "scan_blocks", Grid: cuda.Dim(nb), Block: cuda.Dim(block), Args: []Arg{Buf(0), Buf(1), Buf(2), I32(n)}},
			{Kernel: "scan_sums", Grid: cuda.Dim(1), Block: cuda.Dim(32), Args: []Arg{Buf(2), I32(nb)}},
			{Kernel: "scan_add", Grid: cuda.Dim(nb), Block: cuda.Dim(block), Args: []Arg{Buf(1), Buf(2), I32(n)}},
		},
		Check: func(out [][]byte) error {
			got, want := casedata.I32s(out[1]), ref()
			for i := range want {
				if got[i] != want[i] {
					return fmt.Errorf("out[%d] = %d, want %d", i, got[i], want[i])
				}
			}
			return nil
		},
		prepare: func() { ref() },
	}
}

func bitonicCase() Case {
	const n = 1 << 14
	r := newRNG(4)
	keys := make([]uint32, n)
	for i := range keys {
		keys[i] = uint32(r.next())
	}
	init := make([]byte, 4*n)
	for i, k := range keys {
		init[4*i], init[4*i+1], init[4*i+2], init[4*i+3] = byte(k), byte(k>>8), byte(k>>16), byte(k>>24)
	}
	var launches []Launch
	for k := 2; k <= n; k <<= 1 {
		for j := k >> 1; j > 0; j >>= 1 {
			launches = append(launches, Launch{Kernel: "bitonic_step", Grid: cuda.Dim(n / 256), Block: cuda.Dim(256),
				Args: []Arg{Buf(0), I32(j), I32(k), I32(n)}})
		}
	}
	ref := lazy(func() []uint32 { s := slices.Clone(keys); slices.Sort(s); return s })
	return Case{
		Name: "bitonic-sort", Category: "sort", File: "bitonic.cu", Source: source("bitonic.cu"),
		Buffers: []Buffer{buf("keys", init, 4*n)}, Launches: launches,
		Check:   func(out [][]byte) error { return exactly("keys", out[0], ref()) },
		prepare: func() { ref() },
	}
}

func stencil2DCase() Case {
	const n = 512
	r := newRNG(5)
	in := r.floats(n*n, 0, 1)
	ref := lazy(func() []float64 {
		out := make([]float64, n*n)
		for y := range n {
			for x := range n {
				i := y*n + x
				if x == 0 || y == 0 || x == n-1 || y == n-1 {
					out[i] = float64(in[i])
					continue
				}
				out[i] = 0.25 * (float64(in[i-1]) + float64(in[i+1]) + float64(in[i-n]) + float64(in[i+n]))
			}
		}
		return out
	})
	return Case{
		Name: "jacobi-2d", Category: "stencil", File: "stencil2d.cu", Source: source("stencil2d.cu"), Options: []string{"-std=c++17"},
		Buffers:  []Buffer{buf("in", casedata.F32Bytes(in), 4*n*n), buf("out", nil, 4*n*n)},
		Launches: []Launch{{Kernel: "jacobi2d", Grid: cuda.Dim(n/16, n/16), Block: cuda.Dim(16, 16), Args: []Arg{Buf(0), Buf(1), I32(n)}}},
		Check:    func(out [][]byte) error { return closeTo("out", out[1], ref(), 1e-6) },
		prepare:  func() { ref() },
	}
}

func stencil3DCase() Case {
	const n, alpha = 96, 0.1
	r := newRNG(6)
	in := r.floats(n*n*n, 0, 1)
	ref := lazy(func() []float64 {
		out := make([]float64, n*n*n)
		for z := range n {
			for y := range n {
				for x := range n {
					i := (z*n+y)*n + x
					v := float64(in[i])
					if x == 0 || y == 0 || z == 0 || x == n-1 || y == n-1 || z == n-1 {
						out[i] = v
						continue
					}
					lap := float64(in[i-1]) + float64(in[i+1]) + float64(in[i-n]) + float64(in[i+n]) + float64(in[i-n*n]) + float64(in[i+n*n]) - 6*v
					out[i] = v + alpha*lap
				}
			}
		}
		return out
	})
	return Case{
		Name: "heat-3d", Category: "stencil", File: "stencil3d.cu", Source: source("stencil3d.cu"),
		Buffers: []Buffer{buf("in", casedata.F32Bytes(in), 4*n*n*n), buf("out", nil, 4*n*n*n)},
		Launches: []Launch{{Kernel: "heat3d", Grid: cuda.Dim(n/32, n/8, n), Block: cuda.Dim(32, 8),
			Args: []Arg{Buf(0), Buf(1), I32(n), F32(alpha)}}},
		Check:   func(out [][]byte) error { return closeTo("out", out[1], ref(), 1e-5) },
		prepare: func() { ref() },
	}
}

func softmaxCase() Case {
	const rows, cols, block = 256, 1000, 256
	r := newRNG(7)
	x := r.floats(rows*cols, -8, 8)
	ref := lazy(func() []float64 {
		out := make([]float64, rows*cols)
		for i := range rows {
			row := x[i*cols : (i+1)*cols]
			m := math.Inf(-1)
			for _, v := range row {
				m = math.Max(m, float64(v))
			}
			s := 0.0
			for _, v := range row {
				s += math.Exp(float64(v) - m)
			}
			for j, v := range row {
				out[i*cols+j] = math.Exp(float64(v)-m) / s
			}
		}
		return out
	})
	expr := fmt.Sprintf("softmax_rows<%d>", block)
	return Case{
		Name: "softmax", Category: "machine learning", File: "softmax.cu", Source: source("softmax.cu"),
		Options: []string{"-std=c++17"}, Headers: commonHeaders(), NameExpressions: []string{expr, "softmax_rows<128>", "softmax_rows<512>"},
		Buffers:  []Buffer{buf("x", casedata.F32Bytes(x), 4*rows*cols), buf("y", nil, 4*rows*cols)},
		Launches: []Launch{{Kernel: expr, Grid: cuda.Dim(rows), Block: cuda.Dim(block), Args: []Arg{Buf(0), Buf(1), I32(cols)}}},
		Check:    func(out [][]byte) error { return closeTo("y", out[1], ref(), 1e-4) },
		prepare:  func() { ref() },
	}
}

func layernormCase() Case {
	const rows, cols, eps = 128, 768, 1e-5
	r := newRNG(8)
	x, g, b := r.floats(rows*cols, -3, 3), r.floats(cols, 0.5, 1.5), r.floats(cols, -0.5, 0.5)
	ref := lazy(func() []float64 {
		out := make([]float64, rows*cols)
		for i := range rows {
			row := x[i*cols : (i+1)*cols]
			mean, v := 0.0, 0.0
			for _, e := range row {
				mean += float64(e)
			}
			mean /= cols
			for _, e := range row {
				v += (float64(e) - mean) * (float64(e) - mean)
			}
			rstd := 1 / math.Sqrt(v/cols+eps)
			for j, e := range row {
				out[i*cols+j] = (float64(e)-mean)*rstd*float64(g[j]) + float64(b[j])
			}
		}
		return out
	})
	return Case{
		Name: "layernorm", Category: "machine learning", File: "layernorm.cu", Source: source("layernorm.cu"),
		Options: []string{"-std=c++17", "--use_fast_math"}, Headers: commonHeaders(),
		Buffers: []Buffer{buf("x", casedata.F32Bytes(x), 4*rows*cols), buf("gamma", casedata.F32Bytes(g), 4*cols), buf("beta", casedata.F32Bytes(b), 4*cols), buf("y", nil, 4*rows*cols)},
		Launches: []Launch{{Kernel: "layernorm", Grid: cuda.Dim(rows), Block: cuda.Dim(256),
			Args: []Arg{Buf(0), Buf(1), Buf(2), Buf(3), I32(cols), F32(eps)}}},
		Check:   func(out [][]byte) error { return closeTo("y", out[3], ref(), 1e-4) },
		prepare: func() { ref() },
	}
}

func fftCase() Case {
	const n, batch = 1024, 64
	r := newRNG(9)
	in := r.floats(2*n*batch, -1, 1)
	ref := lazy(func() []float64 {
		out := make([]float64, 0, 2*n*batch)
		for b := range batch {
			x := make([]complex128, n)
			for i := range x {
				x[i] = complex(float64(in[2*(b*n+i)]), float64(in[2*(b*n+i)+1]))
			}
			for _, v := range dft(x) {
				out = append(out, real(v), imag(v))
			}
		}
		return out
	})
	return Case{
		Name: "fft-1024", Category: "spectral", File: "fft.cu", Source: source("fft.cu"), Headers: commonHeaders(),
		Options:  []string{"-std=c++17"},
		Buffers:  []Buffer{buf("in", casedata.F32Bytes(in), 8*n*batch), buf("out", nil, 8*n*batch)},
		Launches: []Launch{{Kernel: "fft1024", Grid: cuda.Dim(batch), Block: cuda.Dim(n / 2), Args: []Arg{Buf(0), Buf(1)}}},
		// Values grow to about sqrt(n); float32 twiddles keep errors near 1e-3 of that.
		Check:   func(out [][]byte) error { return closeTo("X", out[1], ref(), 2e-3) },
		prepare: func() { ref() },
	}
}

// dft is a recursive radix-2 FFT in float64, the reference.
func dft(x []complex128) []complex128 {
	n := len(x)
	if n == 1 {
		return []complex128{x[0]}
	}
	even, odd := make([]complex128, n/2), make([]complex128, n/2)
	for i := range n / 2 {
		even[i], odd[i] = x[2*i], x[2*i+1]
	}
	e, o := dft(even), dft(odd)
	out := make([]complex128, n)
	for k := range n / 2 {
		t := cmplx.Exp(complex(0, -2*math.Pi*float64(k)/float64(n))) * o[k]
		out[k], out[k+n/2] = e[k]+t, e[k]-t
	}
	return out
}

func histogramCase() Case {
	const n = 1 << 22
	r := newRNG(10)
	data := make([]byte, n)
	for i := range data {
		// Skewed, as real data is: contention on the popular bins.
		data[i] = byte(r.next() % uint64(1+i%256))
	}
	ref := lazy(func() []uint32 {
		h := make([]uint32, 256)
		for _, b := range data {
			h[b]++
		}
		return h
	})
	return Case{
		Name: "histogram-256", Category: "histogram", File: "histogram.cu", Source: source("histogram.cu"),
		Buffers:  []Buffer{buf("data", data, n), buf("bins", nil, 4*256)},
		Launches: []Launch{{Kernel: "histogram256", Grid: cuda.Dim(264), Block: cuda.Dim(256), Args: []Arg{Buf(0), Buf(1), I32(n)}}},
		Check:    func(out [][]byte) error { return exactly("bins", out[1], ref()) },
		prepare:  func() { ref() },
	}
}

func transposeCase() Case {
	const rows, cols, tile = 1000, 700, 32
	r := newRNG(11)
	in := r.floats(rows*cols, -1, 1)
	expr := fmt.Sprintf("transpose<float, %d>", tile)
	return Case{
		Name: "transpose", Category: "data movement", File: "transpose.cu", Source: source("transpose.cu"),
		NameExpressions: []string{expr, "transpose<double, 32>", "transpose<int, 16>"},
		Buffers:         []Buffer{buf("in", casedata.F32Bytes(in), 4*rows*cols), buf("out", nil, 4*rows*cols)},
		Launches: []Launch{{Kernel: expr, Grid: cuda.Dim(ceilDiv(cols, tile), ceilDiv(rows, tile)), Block: cuda.Dim(tile, tile),
			Args: []Arg{Buf(0), Buf(1), I32(rows), I32(cols)}}},
		Check: func(out [][]byte) error {
			got := casedata.F32s(out[1])
			for y := range rows {
				for x := range cols {
					if got[x*rows+y] != in[y*cols+x] {
						return fmt.Errorf("out[%d][%d] = %v, want %v", x, y, got[x*rows+y], in[y*cols+x])
					}
				}
			}
			return nil
		},
	}
}

func spmvCase() Case {
	const rows, cols = 4096, 4096
	r := newRNG(12)
	rowptr := []int32{0}
	var colidx []int32
	var vals []float32
	for range rows {
		nnz := 4 + int(r.next()%60)
		for range nnz {
			colidx = append(colidx, int32(r.next()%cols))
			vals = append(vals, r.float(-1, 1))
		}
		rowptr = append(rowptr, int32(len(colidx)))
	}
	x := r.floats(cols, -1, 1)
	ref := lazy(func() []float64 {
		y := make([]float64, rows)
		for i := range rows {
			for j := rowptr[i]; j < rowptr[i+1]; j++ {
				y[i] += float64(vals[j]) * float64(x[colidx[j]])
			}
		}
		return y
	})
	return Case{
		Name: "spmv-csr", Category: "sparse linear algebra", File: "spmv.cu", Source: source("spmv.cu"), Headers: commonHeaders(),
		Options: []string{"-std=c++17"},
		Buffers: []Buffer{buf("rowptr", casedata.I32Bytes(rowptr), 4*len(rowptr)), buf("colidx", casedata.I32Bytes(colidx), 4*len(colidx)),
			buf("vals", casedata.F32Bytes(vals), 4*len(vals)), buf("x", casedata.F32Bytes(x), 4*cols), buf("y", nil, 4*rows)},
		Launches: []Launch{{Kernel: "spmv_csr", Grid: cuda.Dim(rows * 32 / 256), Block: cuda.Dim(256),
			Args: []Arg{Buf(0), Buf(1), Buf(2), Buf(3), Buf(4), I32(rows)}}},
		Check:   func(out [][]byte) error { return closeTo("y", out[4], ref(), 1e-4) },
		prepare: func() { ref() },
	}
}

func conv2DCase() Case {
	const w, h, k = 640, 480, 7
	r := newRNG(13)
	img, filt := r.floats(w*h, 0, 1), r.floats(k*k, -1, 1)
	ref := lazy(func() []float64 {
		out := make([]float64, w*h)
		for y := range h {
			for x := range w {
				s := 0.0
				for dy := -k / 2; dy <= k/2; dy++ {
					for dx := -k / 2; dx <= k/2; dx++ {
						xx, yy := x+dx, y+dy
						if xx >= 0 && yy >= 0 && xx < w && yy < h {
							s += float64(img[yy*w+xx]) * float64(filt[(dy+k/2)*k+dx+k/2])
						}
					}
				}
				out[y*w+x] = s
			}
		}
		return out
	})
	return Case{
		Name: "conv2d-7x7", Category: "image", File: "conv2d.cu", Source: source("conv2d.cu"),
		Buffers: []Buffer{buf("img", casedata.F32Bytes(img), 4*w*h), buf("filter", casedata.F32Bytes(filt), 4*k*k), buf("out", nil, 4*w*h)},
		Launches: []Launch{{Kernel: "conv2d", Grid: cuda.Dim(w/16, h/16), Block: cuda.Dim(16, 16), Shared: 4 * k * k,
			Args: []Arg{Buf(0), Buf(1), Buf(2), I32(w), I32(h), I32(k)}}},
		Check:   func(out [][]byte) error { return closeTo("out", out[2], ref(), 1e-4) },
		prepare: func() { ref() },
	}
}

func nbodyCase() Case {
	const n, dt, eps2 = 4096, 0.01, 0.01
	r := newRNG(14)
	pos := make([]float32, 4*n)
	for i := range n {
		pos[4*i], pos[4*i+1], pos[4*i+2], pos[4*i+3] = r.float(-1, 1), r.float(-1, 1), r.float(-1, 1), r.float(0.5, 1)
	}
	vel := r.floats(4*n, -0.1, 0.1)
	for i := range n {
		vel[4*i+3] = 0
	}
	ref := lazy(func() []float64 {
		out := make([]float64, 8*n) // new velocities, then new positions
		for i := range n {
			var ax, ay, az float64
			for j := range n {
				dx := float64(pos[4*j]) - float64(pos[4*i])
				dy := float64(pos[4*j+1]) - float64(pos[4*i+1])
				dz := float64(pos[4*j+2]) - float64(pos[4*i+2])
				inv := 1 / math.Sqrt(dx*dx+dy*dy+dz*dz+eps2)
				s := float64(pos[4*j+3]) * inv * inv * inv
				ax, ay, az = ax+dx*s, ay+dy*s, az+dz*s
			}
			vx, vy, vz := float64(vel[4*i])+ax*dt, float64(vel[4*i+1])+ay*dt, float64(vel[4*i+2])+az*dt
			copy(out[4*i:], []float64{vx, vy, vz, 0})
			copy(out[4*n+4*i:], []float64{float64(pos[4*i]) + vx*dt, float64(pos[4*i+1]) + vy*dt, float64(pos[4*i+2]) + vz*dt, float64(pos[4*i+3])})
		}
		return out
	})
	return Case{
		Name: "nbody", Category: "physics", File: "nbody.cu", Source: source("nbody.cu"),
		Buffers: []Buffer{buf("pos", casedata.F32Bytes(pos), 16*n), buf("vel", casedata.F32Bytes(vel), 16*n), buf("newpos", nil, 16*n)},
		Launches: []Launch{{Kernel: "nbody_step", Grid: cuda.Dim(n / 256), Block: cuda.Dim(256), Shared: 16 * 256,
			Args: []Arg{Buf(0), Buf(1), Buf(2), I32(n), F32(dt), F32(eps2)}}},
		Check: func(out [][]byte) error {
			want := ref()
			if err := closeTo("vel", out[1], want[:4*n], 1e-3); err != nil {
				return err
			}
			return closeTo("newpos", out[2], want[4*n:], 1e-4)
		},
		prepare: func() { ref() },
	}
}

func mandelbrotCase() Case {
	const w, h, maxit = 1024, 768, 256
	const x0, y0, dx, dy = -2.2, -1.2, 3.2 / w, 2.4 / h
	ref := lazy(func() []int32 {
		out := make([]int32, w*h)
		for y := range h {
			for x := range w {
				cr, ci := float32(x0)+float32(x)*float32(dx), float32(y0)+float32(y)*float32(dy)
				var zr, zi float32
				it := int32(0)
				for it < maxit && zr*zr+zi*zi <= 4 {
					zr, zi = zr*zr-zi*zi+cr, 2*zr*zi+ci
					it++
				}
				out[y*w+x] = it
			}
		}
		return out
	})
	return Case{
		Name: "mandelbrot", Category: "fractal", File: "mandelbrot.cu", Source: source("mandelbrot.cu"),
		// No fused multiply-add, so the GPU rounds as the Go reference does.
		Options: []string{"--fmad=false"},
		Buffers: []Buffer{buf("iters", nil, 4*w*h)},
		Launches: []Launch{{Kernel: "mandelbrot", Grid: cuda.Dim(w/16, h/16), Block: cuda.Dim(16, 16),
			Args: []Arg{Buf(0), I32(w), I32(h), F32(x0), F32(y0), F32(dx), F32(dy), I32(maxit)}}},
		Check: func(out [][]byte) error {
			got, want := casedata.I32s(out[0]), ref()
			// Points on the set's boundary are chaotic: one rounding apart
			// can change their count. Allow a few in a thousand.
			bad := 0
			for i := range want {
				if got[i] != want[i] {
					bad++
				}
			}
			if bad > len(want)/1000 {
				return fmt.Errorf("%d of %d pixels differ", bad, len(want))
			}
			return nil
		},
		prepare: func() { ref() },
	}
}

func blackScholesCase() Case {
	const n, rate, vol = 1 << 18, 0.02, 0.3
	r := newRNG(15)
	s, k, t := r.floats(n, 5, 30), r.floats(n, 1, 100), r.floats(n, 0.25, 10)
	ref := lazy(func() []float64 {
		out := make([]float64, 2*n)
		cnd := func(d float64) float64 { return 0.5 * math.Erfc(-d/math.Sqrt2) }
		for i := range n {
			S, K, T := float64(s[i]), float64(k[i]), float64(t[i])
			sq := math.Sqrt(T)
			d1 := (math.Log(S/K) + (rate+0.5*vol*vol)*T) / (vol * sq)
			d2 := d1 - vol*sq
			e := math.Exp(-rate * T)
			out[i] = S*cnd(d1) - K*e*cnd(d2)
			out[n+i] = K*e*cnd(-d2) - S*cnd(-d1)
		}
		return out
	})
	return Case{
		Name: "black-scholes", Category: "finance", File: "blackscholes.cu", Source: source("blackscholes.cu"),
		Buffers: []Buffer{buf("S", casedata.F32Bytes(s), 4*n), buf("K", casedata.F32Bytes(k), 4*n), buf("T", casedata.F32Bytes(t), 4*n), buf("call", nil, 4*n), buf("put", nil, 4*n)},
		Launches: []Launch{{Kernel: "black_scholes", Grid: cuda.Dim(n / 256), Block: cuda.Dim(256),
			Args: []Arg{Buf(0), Buf(1), Buf(2), F32(rate), F32(vol), Buf(3), Buf(4), I32(n)}}},
		Check: func(out [][]byte) error {
			want := ref()
			if err := closeTo("call", out[3], want[:n], 2e-4); err != nil {
				return err
			}
			return closeTo("put", out[4], want[n:], 2e-4)
		},
		prepare: func() { ref() },
	}
}
