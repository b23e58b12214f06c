package suite

import "github.com/kcache/kcache/internal/demo/casedata"

// Reductions and scans: tree reduction, Blelloch scan, histogram.

// reduceSum sums 100003 floats in [0, 1) with 32 groups of 64 items, then
// one group over the 32 partial sums. The partials are checked too: the
// reference reproduces the kernel's grid-stride decomposition.
//
// Tolerance: every item adds ~49 values serially and the tree adds 6
// levels (11 more for the final sum), so each result has at most ~70
// roundings of a running sum no larger than itself: relative error
// ≤ 70ε ≈ 4e-6; rtol 1e-5.
func reduceSum() spec {
	const n, groups, wg = 100003, 32, 64
	r := newRand(12)
	x := uniform(r, n, 0, 1)
	cs := Case{
		Name:     "reduce-sum",
		Category: "reduction",
		Source:   source("reduce.cl"),
		Buffers:  []Buffer{in("in", casedata.F32Bytes(x)), out("partial", groups), out("result", 1)},
		Launches: []Launch{
			{Kernel: "reduce_partial", Global: dims(groups * wg), Local: dims(wg),
				Args: args(BufferArg(0), I32(n), BufferArg(1), LocalArg(4*wg))},
			{Kernel: "reduce_final", Global: dims(wg), Local: dims(wg),
				Args: args(BufferArg(1), I32(groups), BufferArg(2), LocalArg(4*wg))},
		},
	}
	partials := func() []float64 {
		p := make([]float64, groups)
		for i, v := range x {
			p[i%(groups*wg)/wg] += float64(v)
		}
		return p
	}
	total := func() []float64 {
		var s float64
		for _, v := range partials() {
			s += v
		}
		return []float64{s}
	}
	return newSpec(cs, expectF32(1, 1e-5, 0, partials), expectF32(2, 1e-5, 0, total))
}

// exclusiveScan returns the exclusive prefix sums of v.
func exclusiveScan(v []uint32) []uint32 {
	out := make([]uint32, len(v))
	var run uint32
	for i, x := range v {
		out[i] = run
		run += x
	}
	return out
}

// scanBlelloch computes the exclusive prefix sum of 15000 uints in three
// launches: block scans of 128 elements (118 blocks, the last partial), a
// scan of the block totals by the same kernel, and the offset add. Integer
// arithmetic: every buffer must match exactly.
func scanBlelloch() spec {
	const n, wg = 15000, 64
	const blocks = (n + 2*wg - 1) / (2 * wg)
	r := newRand(13)
	x := make([]uint32, n)
	for i := range x {
		x[i] = r.Uint32N(1000)
	}
	cs := Case{
		Name:     "scan-blelloch",
		Category: "scan",
		Source:   source("scan.cl"),
		Options:  "-DWG=64",
		Buffers: []Buffer{
			in("in", casedata.U32Bytes(x)), out("out", n), out("block_sums", blocks),
			out("block_offsets", blocks), out("total", 1),
		},
		Launches: []Launch{
			{Kernel: "scan_blocks", Global: dims(blocks * wg), Local: dims(wg),
				Args: args(BufferArg(0), BufferArg(1), BufferArg(2), U32(n))},
			{Kernel: "scan_blocks", Global: dims(wg), Local: dims(wg),
				Args: args(BufferArg(2), BufferArg(3), BufferArg(4), U32(blocks))},
			{Kernel: "add_offsets", Global: dims(blocks * wg), Local: dims(wg),
				Args: args(BufferArg(1), BufferArg(3), U32(n))},
		},
	}
	sums := func() []uint32 {
		s := make([]uint32, blocks)
		for i, v := range x {
			s[i/(2*wg)] += v
		}
		return s
	}
	return newSpec(cs,
		expectU32(1, func() []uint32 { return exclusiveScan(x) }),
		expectU32(2, sums),
		expectU32(3, func() []uint32 { return exclusiveScan(sums()) }),
		expectU32(4, func() []uint32 {
			var t uint32
			for _, v := range x {
				t += v
			}
			return []uint32{t}
		}))
}

// histogram256 bins 200002 bytes (not a multiple of 4: the kernel's scalar
// tail runs) drawn from a triangular distribution, so the counts vary
// widely between bins. Atomics make the order nondeterministic but the
// counts exact.
func histogram256() spec {
	const n, groups, wg = 200002, 16, 64
	r := newRand(14)
	data := make([]byte, n)
	for i := range data {
		data[i] = byte((r.IntN(256) + r.IntN(256)) / 2)
	}
	cs := Case{
		Name:     "histogram-256",
		Category: "histogram",
		Source:   source("histogram.cl"),
		Options:  "-DWG=64",
		Buffers:  []Buffer{in("data", data), out("hist", 256)},
		Launches: []Launch{{
			Kernel: "histogram256", Global: dims(groups * wg), Local: dims(wg),
			Args: args(BufferArg(0), U32(n), BufferArg(1)),
		}},
	}
	return newSpec(cs, expectU32(1, func() []uint32 {
		h := make([]uint32, 256)
		for _, b := range data {
			h[b]++
		}
		return h
	}))
}
