// bitonic.cl: bitonic sort of n = 2^k uint keys (n >= 2*WG), ascending.
// Stages whose compare distance j fits in a 2*WG block run in __local
// memory (bitonic_sort_local for all k <= 2*WG, bitonic_merge_local for the
// tail j <= WG of each larger k); wider distances use one global launch per
// (k, j). The sort direction of a pair depends on bit k of its global index.
#ifndef WG
#define WG 64
#endif
#define BLOCK (2 * WG)

// compare_exchange orders t[lo], t[lo + j] ascending if asc, else descending.
static inline void compare_exchange(__local uint* t, uint lo, uint j, bool asc)
{
    const uint a = t[lo];
    const uint b = t[lo + j];
    if ((a > b) == asc) {
        t[lo] = b;
        t[lo + j] = a;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bitonic_sort_local(__global uint* keys)
{
    __local uint t[BLOCK];
    const uint lid = get_local_id(0);
    const uint base = get_group_id(0) * BLOCK;
    t[lid] = keys[base + lid];
    t[lid + WG] = keys[base + lid + WG];
    for (uint k = 2; k <= BLOCK; k <<= 1) {
        for (uint j = k >> 1; j > 0; j >>= 1) {
            barrier(CLK_LOCAL_MEM_FENCE);
            const uint lo = 2 * lid - (lid & (j - 1)); // pair index -> lower element
            compare_exchange(t, lo, j, ((base + lo) & k) == 0);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    keys[base + lid] = t[lid];
    keys[base + lid + WG] = t[lid + WG];
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bitonic_merge_local(__global uint* keys, const uint k)
{
    __local uint t[BLOCK];
    const uint lid = get_local_id(0);
    const uint base = get_group_id(0) * BLOCK;
    t[lid] = keys[base + lid];
    t[lid + WG] = keys[base + lid + WG];
    const bool asc = (base & k) == 0; // k > BLOCK: one direction per block
    for (uint j = WG; j > 0; j >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        compare_exchange(t, 2 * lid - (lid & (j - 1)), j, asc);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    keys[base + lid] = t[lid];
    keys[base + lid + WG] = t[lid + WG];
}

__kernel void bitonic_merge_global(__global uint* keys, const uint k, const uint j)
{
    const uint i = get_global_id(0); // one item per compare-exchange pair
    const uint lo = 2 * i - (i & (j - 1));
    const uint hi = lo + j;
    const uint a = keys[lo];
    const uint b = keys[hi];
    if ((a > b) == ((lo & k) == 0)) {
        keys[lo] = b;
        keys[hi] = a;
    }
}
