// radix_sort.cl: stable LSD radix sort of (uint key, uint value) pairs,
// RADIX_BITS per pass, three launches per pass:
//   radix_count   per-block digit histogram, stored digit-major so that
//   radix_scan    one exclusive scan gives every (digit, block) its output base
//   radix_scatter writes each pair to base + its rank among equal digits
//                 earlier in the block, which keeps the sort stable.
// Blocks are one element per work-item; n need not be a multiple of WG.
#include "common.h"

#ifndef WG
#define WG 64
#endif
#ifndef RADIX_BITS
#define RADIX_BITS 4
#endif
#define RADIX (1u << RADIX_BITS)
#define DIGIT(key, shift) (((key) >> (shift)) & (RADIX - 1))

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void radix_count(__global const uint* restrict keys, __global uint* restrict counts, const uint n,
                 const uint shift)
{
    __local uint hist[RADIX];
    const uint lid = get_local_id(0);
    const uint gid = get_global_id(0);
    for (uint d = lid; d < RADIX; d += WG)
        hist[d] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (gid < n)
        atomic_inc(&hist[DIGIT(keys[gid], shift)]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = lid; d < RADIX; d += WG)
        counts[d * get_num_groups(0) + get_group_id(0)] = hist[d];
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void radix_scan(__global const uint* restrict counts, __global uint* restrict offsets, const uint total)
{
    __local uint scratch[2 * WG];
    wg_exclusive_scan_global_u32(counts, offsets, total, scratch);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void radix_scatter(__global const uint* restrict keys_in, __global const uint* restrict vals_in,
                   __global uint* restrict keys_out, __global uint* restrict vals_out,
                   __global const uint* restrict offsets, const uint n, const uint shift)
{
    __local uint digits[WG];
    const uint lid = get_local_id(0);
    const uint gid = get_global_id(0);
    const uint key = gid < n ? keys_in[gid] : 0;
    const uint d = gid < n ? DIGIT(key, shift) : RADIX; // RADIX never matches a real digit
    digits[lid] = d;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (gid >= n)
        return;
    uint rank = 0;
    for (uint j = 0; j < lid; ++j)
        rank += digits[j] == d;
    const uint dst = offsets[d * get_num_groups(0) + get_group_id(0)] + rank;
    keys_out[dst] = key;
    vals_out[dst] = vals_in[gid];
}
