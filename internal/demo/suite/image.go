package suite

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// Image filters: separable Gaussian blur, Sobel, 3x3 median, bilateral.

// synthGray draws a w x h grey image in [0, 1]: smooth waves, a bright
// rectangle (hard edges for the edge-aware filters) and mild noise.
func synthGray(r *rand.Rand, w, h int) []float32 {
	img := make([]float32, w*h)
	for y := range h {
		for x := range w {
			v := 0.45 + 0.25*math.Sin(float64(x)/9)*math.Cos(float64(y)/7)
			if x > w/4 && x < w/2 && y > h/3 && y < 3*h/4 {
				v = 0.9
			}
			v += 0.05 * (r.Float64() - 0.5)
			img[y*w+x] = float32(min(max(v, 0), 1))
		}
	}
	return img
}

// synthRGBA draws a w x h RGBA8 image: a different gradient per channel,
// a disc, and salt-and-pepper noise on one pixel in 16 (what a median
// filter is for).
func synthRGBA(r *rand.Rand, w, h int) []byte {
	img := make([]byte, 4*w*h)
	for y := range h {
		for x := range w {
			p := img[4*(y*w+x):]
			p[0] = byte(255 * x / w)
			p[1] = byte(255 * y / h)
			p[2] = byte(128 + 100*math.Sin(float64(x+y)/11))
			p[3] = 255
			if dx, dy := x-w/2, y-h/2; dx*dx+dy*dy < h*h/9 {
				p[0], p[1], p[2] = 230, 40, 60
			}
			if r.IntN(16) == 0 {
				c := byte(255 * r.IntN(2))
				p[0], p[1], p[2] = c, c, c
			}
		}
	}
	return img
}

// clampi clamps v to [0, n-1], the clamp-to-edge border rule.
func clampi(v, n int) int { return min(max(v, 0), n-1) }

// gaussianBlur blurs a 200 x 120 image with a 9-tap Gaussian (sigma 2),
// rows then columns. The intermediate is checked as well as the result.
//
// Tolerance: each pass is a weighted average (weights sum to 1) of nine
// values in [0, 1], nine roundings ≤ 9ε ≈ 5e-7: atol 2e-6.
func gaussianBlur() spec {
	const w, h, radius, wg = 200, 120, 4, 64
	r := newRand(18)
	img := synthGray(r, w, h)
	weights := make([]float32, 2*radius+1)
	var sum float64
	for i := range weights {
		d := float64(i - radius)
		sum += math.Exp(-d * d / (2 * 2 * 2))
	}
	for i := range weights {
		d := float64(i - radius)
		weights[i] = float32(math.Exp(-d*d/(2*2*2)) / sum)
	}
	cs := Case{
		Name:     "gaussian-blur",
		Category: "image filter",
		Source:   source("gaussian_blur.cl"),
		Options:  "-DRADIUS=4 -DWG=64",
		Headers:  commonHeaders(),
		Buffers:  []Buffer{in("src", casedata.F32Bytes(img)), out("tmp", w*h), out("dst", w*h), in("weights", casedata.F32Bytes(weights))},
		Launches: []Launch{
			{Kernel: "blur_rows", Global: dims(roundUp(w, wg), h), Local: dims(wg, 1),
				Args: args(BufferArg(0), BufferArg(1), BufferArg(3), I32(w), I32(h))},
			{Kernel: "blur_cols", Global: dims(roundUp(w, 16), roundUp(h, 4)), Local: dims(16, 4),
				Args: args(BufferArg(1), BufferArg(2), BufferArg(3), I32(w), I32(h))},
		},
	}
	// blur applies the filter along x (dx=1) or y (dy=1) in double precision.
	blur := func(src []float64, dx, dy int) []float64 {
		dst := make([]float64, w*h)
		for y := range h {
			for x := range w {
				var acc float64
				for k := -radius; k <= radius; k++ {
					acc += float64(weights[k+radius]) * src[clampi(y+k*dy, h)*w+clampi(x+k*dx, w)]
				}
				dst[y*w+x] = acc
			}
		}
		return dst
	}
	rows := func() []float64 { return blur(widen(img), 1, 0) }
	return newSpec(cs,
		expectF32(1, 1e-5, 2e-6, rows),
		expectF32(2, 1e-5, 2e-6, func() []float64 { return blur(rows(), 0, 1) }))
}

// sobel computes the Sobel gradient magnitude of a 130 x 97 RGBA image
// (neither side a multiple of the 8x8 tile).
//
// Tolerance: luma is a 3-term dot product (error ~2ε), the gradients sum
// six terms of magnitude ≤ 2 and the magnitude is ≤ 5.7, so the error is
// ~20ε·5.7 ≈ 7e-6 in the worst case: atol 1e-5 plus rtol 1e-5.
func sobel() spec {
	const w, h, tile = 130, 97, 8
	r := newRand(19)
	img := synthRGBA(r, w, h)
	cs := Case{
		Name:     "sobel",
		Category: "image filter",
		Source:   source("sobel.cl"),
		Options:  "-DTILE=8",
		Headers:  commonHeaders(),
		Buffers:  []Buffer{in("rgba", img), out("magnitude", w*h)},
		Launches: []Launch{{
			Kernel: "sobel_rgba", Global: dims(roundUp(w, tile), roundUp(h, tile)), Local: dims(tile, tile),
			Args: args(BufferArg(0), BufferArg(1), I32(w), I32(h)),
		}},
	}
	return newSpec(cs, expectF32(1, 1e-5, 1e-5, func() []float64 {
		luma := func(x, y int) float64 {
			p := img[4*(clampi(y, h)*w+clampi(x, w)):]
			return (0.299*float64(p[0]) + 0.587*float64(p[1]) + 0.114*float64(p[2])) / 255
		}
		mag := make([]float64, w*h)
		for y := range h {
			for x := range w {
				gx := luma(x+1, y-1) + 2*luma(x+1, y) + luma(x+1, y+1) - luma(x-1, y-1) - 2*luma(x-1, y) - luma(x-1, y+1)
				gy := luma(x-1, y+1) + 2*luma(x, y+1) + luma(x+1, y+1) - luma(x-1, y-1) - 2*luma(x, y-1) - luma(x+1, y-1)
				mag[y*w+x] = math.Hypot(gx, gy)
			}
		}
		return mag
	}))
}

// median3x3 filters a 123 x 77 RGBA image with salt-and-pepper noise,
// per channel. Selection is exact, so every byte must match.
func median3x3() spec {
	const w, h = 123, 77
	r := newRand(20)
	img := synthRGBA(r, w, h)
	cs := Case{
		Name:     "median-3x3",
		Category: "image filter",
		Source:   source("median.cl"),
		Buffers:  []Buffer{in("src", img), {Name: "dst", Size: 4 * w * h}},
		Launches: []Launch{{
			Kernel: "median3x3_rgba", Global: dims(roundUp(w, 8), roundUp(h, 8)), Local: dims(8, 8),
			Args: args(BufferArg(0), BufferArg(1), I32(w), I32(h)),
		}},
	}
	return newSpec(cs, expectU8(1, func() []byte {
		dst := make([]byte, len(img))
		var v [9]byte
		for y := range h {
			for x := range w {
				for c := range 4 {
					n := 0
					for dy := -1; dy <= 1; dy++ {
						for dx := -1; dx <= 1; dx++ {
							v[n] = img[4*(clampi(y+dy, h)*w+clampi(x+dx, w))+c]
							n++
						}
					}
					s := v
					slices.Sort(s[:])
					dst[4*(y*w+x)+c] = s[4]
				}
			}
		}
		return dst
	}))
}

// bilateral filters a 96 x 64 grey image, radius 3, sigma_s 2, sigma_r 0.1,
// built with -cl-fast-relaxed-math as production image code often is.
//
// Tolerance: the output is a normalised weighted average of values in
// [0, 1]. A relative error δ in the weights moves it by at most ~2δ; fast
// math lets exp lose a few more ulps and reassociate the 49-term sums,
// so δ ≲ 1e-5 and atol 1e-4 leaves a wide margin, while misplaced taps or
// a wrong sigma move pixels near the rectangle's edges by 1e-2 or more.
func bilateral() spec {
	const w, h, radius = 96, 64, 3
	const inv2ss, inv2sr = float32(1.0 / (2 * 2 * 2)), float32(1.0 / (2 * 0.1 * 0.1))
	r := newRand(21)
	img := synthGray(r, w, h)
	cs := Case{
		Name:     "bilateral",
		Category: "image filter",
		Source:   source("bilateral.cl"),
		Options:  "-DRADIUS=3 -cl-fast-relaxed-math",
		Headers:  commonHeaders(),
		Buffers:  []Buffer{in("src", casedata.F32Bytes(img)), out("dst", w*h)},
		Launches: []Launch{{
			Kernel: "bilateral", Global: dims(w, h), Local: dims(16, 4),
			Args: args(BufferArg(0), BufferArg(1), I32(w), I32(h), F32(inv2ss), F32(inv2sr)),
		}},
	}
	return newSpec(cs, expectF32(1, 1e-4, 1e-4, func() []float64 {
		dst := make([]float64, w*h)
		for y := range h {
			for x := range w {
				c := float64(img[y*w+x])
				var sum, norm float64
				for dy := -radius; dy <= radius; dy++ {
					for dx := -radius; dx <= radius; dx++ {
						v := float64(img[clampi(y+dy, h)*w+clampi(x+dx, w)])
						wgt := math.Exp(-float64(dx*dx+dy*dy)*float64(inv2ss) - (v-c)*(v-c)*float64(inv2sr))
						sum += wgt * v
						norm += wgt
					}
				}
				dst[y*w+x] = sum / norm
			}
		}
		return dst
	}))
}
