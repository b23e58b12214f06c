package suite

import (
	"slices"
	"sort"

	"github.com/kcache/kcache/internal/demo/casedata"
)

// Sorting: bitonic sort and LSD radix sort, both multi-launch.

// bitonicSort sorts 4096 uint keys (with many duplicates) in 21 launches:
// one local sort of 128-key blocks, then for each k = 256 ... 4096 the
// global merge steps with j ≥ 128 and one local merge for j ≤ 64.
func bitonicSort() spec {
	const n, wg = 4096, 64
	const block = 2 * wg
	r := newRand(15)
	keys := make([]uint32, n)
	for i := range keys {
		keys[i] = r.Uint32N(1 << 20)
	}
	launches := []Launch{{Kernel: "bitonic_sort_local", Global: dims(n / 2), Local: dims(wg), Args: args(BufferArg(0))}}
	for k := 2 * block; k <= n; k <<= 1 {
		for j := k / 2; j >= block; j >>= 1 {
			launches = append(launches, Launch{
				Kernel: "bitonic_merge_global", Global: dims(n / 2), Local: dims(wg),
				Args: args(BufferArg(0), U32(uint32(k)), U32(uint32(j))),
			})
		}
		launches = append(launches, Launch{
			Kernel: "bitonic_merge_local", Global: dims(n / 2), Local: dims(wg),
			Args: args(BufferArg(0), U32(uint32(k))),
		})
	}
	cs := Case{
		Name:     "bitonic-sort",
		Category: "sort",
		Source:   source("bitonic.cl"),
		Options:  "-DWG=64",
		Buffers:  []Buffer{in("keys", casedata.U32Bytes(keys))},
		Launches: launches,
	}
	return newSpec(cs, expectU32(0, func() []uint32 {
		s := slices.Clone(keys)
		slices.Sort(s)
		return s
	}))
}

// radixSort sorts 3000 (key, index) pairs by key with eight 4-bit LSD
// passes of three launches each (24 launches), ping-ponging A → B → A.
// Keys come from a pool of 1500 values, so half the keys repeat and the
// values (original indices) check stability: the expected output is the
// stable sort. After pass p the pairs are stably sorted by the low 4p
// bits, which gives B's contents (pass 7); the count and offset buffers
// hold pass 8's per-block histogram of B and its exclusive scan.
func radixSort() spec {
	const n, wg, digitBits, passes = 3000, 64, 4, 8
	const groups = (n + wg - 1) / wg
	const radix = 1 << digitBits
	r := newRand(16)
	pool := make([]uint32, n/2)
	for i := range pool {
		pool[i] = r.Uint32()
	}
	keys := make([]uint32, n)
	vals := make([]uint32, n)
	for i := range keys {
		keys[i], vals[i] = pool[r.IntN(len(pool))], uint32(i)
	}
	var launches []Launch
	for p := range passes {
		src, dst := 0, 2 // buffer index of keys; values follow at +1
		if p%2 == 1 {
			src, dst = 2, 0
		}
		shift := U32(uint32(p * digitBits))
		launches = append(launches,
			Launch{Kernel: "radix_count", Global: dims(groups * wg), Local: dims(wg),
				Args: args(BufferArg(src), BufferArg(4), U32(n), shift)},
			Launch{Kernel: "radix_scan", Global: dims(wg), Local: dims(wg),
				Args: args(BufferArg(4), BufferArg(5), U32(radix*groups))},
			Launch{Kernel: "radix_scatter", Global: dims(groups * wg), Local: dims(wg),
				Args: args(BufferArg(src), BufferArg(src+1), BufferArg(dst), BufferArg(dst+1), BufferArg(5), U32(n), shift)},
		)
	}
	cs := Case{
		Name:     "radix-sort",
		Category: "sort",
		Source:   source("radix_sort.cl"),
		Options:  "-DWG=64 -DRADIX_BITS=4",
		Headers:  commonHeaders(),
		Buffers: []Buffer{
			in("keys_a", casedata.U32Bytes(keys)), in("vals_a", casedata.U32Bytes(vals)), out("keys_b", n), out("vals_b", n),
			out("counts", radix*groups), out("offsets", radix*groups),
		},
		Launches: launches,
	}
	// sortedBy returns the pairs stably sorted by key & mask.
	sortedBy := func(mask uint32) (k, v []uint32) {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]]&mask < keys[idx[b]]&mask })
		k, v = make([]uint32, n), make([]uint32, n)
		for i, j := range idx {
			k[i], v[i] = keys[j], vals[j]
		}
		return k, v
	}
	counts := func() []uint32 {
		kb, _ := sortedBy(1<<28 - 1)
		c := make([]uint32, radix*groups)
		for i, key := range kb {
			c[int(key>>28)*groups+i/wg]++
		}
		return c
	}
	return newSpec(cs,
		expectU32(0, func() []uint32 { k, _ := sortedBy(^uint32(0)); return k }),
		expectU32(1, func() []uint32 { _, v := sortedBy(^uint32(0)); return v }),
		expectU32(2, func() []uint32 { k, _ := sortedBy(1<<28 - 1); return k }),
		expectU32(3, func() []uint32 { _, v := sortedBy(1<<28 - 1); return v }),
		expectU32(4, counts),
		expectU32(5, func() []uint32 { return exclusiveScan(counts()) }),
	)
}
