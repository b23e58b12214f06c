package suite

import (
	"math"
	"slices"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// Stencils: 2-D Jacobi, 3-D heat equation, 1-D convolution.

// jacobi2D runs six Jacobi sweeps of the 5-point Laplace stencil on a
// 70 x 62 grid (not a multiple of the 8x8 tile), ping-ponging A → B → A, with
// a sine profile held on the top edge. Both buffers are checked: A after
// sweep 6, B after sweep 5.
//
// Tolerance: a sweep averages four values in [0, 1] with three additions
// and a multiplication by 0.25 (exact), at most ~2ε ≈ 1.2e-7 each, and
// averaging does not amplify earlier errors; six sweeps stay below 1e-6.
func jacobi2D() spec {
	const w, h, tile, steps = 70, 62, 8, 6
	r := newRand(9)
	u := make([]float32, w*h)
	for y := range h {
		for x := range w {
			switch {
			case y == 0:
				u[y*w+x] = float32(math.Sin(math.Pi * float64(x) / float64(w-1)))
			case x == 0 || x == w-1 || y == h-1:
				u[y*w+x] = 0
			default:
				u[y*w+x] = r.Float32()
			}
		}
	}
	launches := make([]Launch, steps)
	for s := range steps {
		src, dst := s%2, 1-s%2
		launches[s] = Launch{
			Kernel: "jacobi5", Global: dims(roundUp(w, tile), roundUp(h, tile)), Local: dims(tile, tile),
			Args: args(BufferArg(src), BufferArg(dst), I32(w), I32(h)),
		}
	}
	cs := Case{
		Name:     "jacobi-2d",
		Category: "stencil",
		Source:   source("jacobi2d.cl"),
		Options:  "-DTILE=8",
		Buffers:  []Buffer{in("A", casedata.F32Bytes(u)), out("B", w*h)},
		Launches: launches,
	}
	sweeps := func(n int) []float64 {
		cur := widen(u)
		for range n {
			next := slices.Clone(cur)
			for y := 1; y < h-1; y++ {
				for x := 1; x < w-1; x++ {
					next[y*w+x] = 0.25 * (cur[(y-1)*w+x] + cur[(y+1)*w+x] + cur[y*w+x-1] + cur[y*w+x+1])
				}
			}
			cur = next
		}
		return cur
	}
	return newSpec(cs,
		expectF32(0, 1e-5, 1e-6, func() []float64 { return sweeps(steps) }),
		expectF32(1, 1e-5, 1e-6, func() []float64 { return sweeps(steps - 1) }))
}

// heat3D takes three explicit steps of the 3-D heat equation on a
// 36 x 20 x 16 grid (alpha 0.1, inside the stability limit 1/6) with
// zero-flux boundaries, A → B → A → B; B holds step 3 and A step 2.
//
// Tolerance: values stay in [0, 1]; a step is eight float32 additions and
// a multiply-add, error ≲ 10ε|u| per step, and a stable explicit step does
// not amplify earlier errors: 1e-6 absolute is several times the bound.
func heat3D() spec {
	const nx, ny, nz, steps = 36, 20, 16, 3
	const alpha = 0.1
	r := newRand(10)
	u := uniform(r, nx*ny*nz, 0, 1)
	launches := make([]Launch, steps)
	for s := range steps {
		src, dst := s%2, 1-s%2
		launches[s] = Launch{
			Kernel: "heat7", Global: dims(roundUp(nx, 8), roundUp(ny, 8)), Local: dims(8, 8),
			Args: args(BufferArg(src), BufferArg(dst), I32(nx), I32(ny), I32(nz), F32(alpha)),
		}
	}
	cs := Case{
		Name:     "heat-3d-7pt",
		Category: "stencil",
		Source:   source("heat3d.cl"),
		Buffers:  []Buffer{in("A", casedata.F32Bytes(u)), out("B", nx*ny*nz)},
		Launches: launches,
	}
	steps3D := func(n int) []float64 {
		cur := widen(u)
		a := float64(float32(alpha))
		for range n {
			next := make([]float64, len(cur))
			at := func(x, y, z int, c float64) float64 {
				if x < 0 || y < 0 || z < 0 || x >= nx || y >= ny || z >= nz {
					return c
				}
				return cur[(z*ny+y)*nx+x]
			}
			for z := range nz {
				for y := range ny {
					for x := range nx {
						c := cur[(z*ny+y)*nx+x]
						sum := at(x-1, y, z, c) + at(x+1, y, z, c) + at(x, y-1, z, c) +
							at(x, y+1, z, c) + at(x, y, z-1, c) + at(x, y, z+1, c)
						next[(z*ny+y)*nx+x] = c + a*(sum-6*c)
					}
				}
			}
			cur = next
		}
		return cur
	}
	return newSpec(cs,
		expectF32(1, 1e-5, 1e-6, func() []float64 { return steps3D(3) }),
		expectF32(0, 1e-5, 1e-6, func() []float64 { return steps3D(2) }))
}

// conv1D convolves 4099 samples (not a multiple of the 64-item group) with
// 17 random taps, zero-padded.
//
// Tolerance: 17 products of magnitude < 1 give the bound 17·ε·17 ≈ 2e-5;
// atol 5e-5.
func conv1D() spec {
	const n, radius, wg = 4099, 8, 64
	r := newRand(11)
	x := uniform(r, n, -1, 1)
	taps := uniform(r, 2*radius+1, -1, 1)
	cs := Case{
		Name:     "conv-1d",
		Category: "stencil",
		Source:   source("conv1d.cl"),
		Options:  "-DRADIUS=8 -DWG=64",
		Buffers:  []Buffer{in("in", casedata.F32Bytes(x)), in("taps", casedata.F32Bytes(taps)), out("out", n)},
		Launches: []Launch{{
			Kernel: "conv1d", Global: dims(roundUp(n, wg)), Local: dims(wg),
			Args: args(BufferArg(0), BufferArg(1), BufferArg(2), I32(n)),
		}},
	}
	return newSpec(cs, expectF32(2, 1e-5, 5e-5, func() []float64 {
		y := make([]float64, n)
		for i := range n {
			for k := range 2*radius + 1 {
				if j := i + k - radius; j >= 0 && j < n {
					y[i] += float64(taps[k]) * float64(x[j])
				}
			}
		}
		return y
	}))
}
