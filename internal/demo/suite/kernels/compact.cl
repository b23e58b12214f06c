// compact.cl: stream compaction, keeping the elements above a threshold in
// their original order. Three launches:
//   compact_mark     flag each element and scan the flags within its group
//                    (Hillis-Steele scan from common.h): local output slot
//                    per kept element and a kept count per group;
//   compact_offsets  one group scans the per-group counts into output bases
//                    and writes the total;
//   compact_scatter  moves each kept element to base + local slot.
#include "common.h"

#ifndef WG
#define WG 64
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void compact_mark(__global const float* restrict in, __global uint* restrict slot,
                  __global uint* restrict group_counts, const uint n, const float threshold)
{
    __local uint scratch[2 * WG];
    const uint gid = get_global_id(0);
    const uint keep = gid < n && in[gid] > threshold;
    const uint incl = wg_inclusive_scan_u32(scratch, keep);
    if (gid < n)
        slot[gid] = incl - keep;
    if (get_local_id(0) == WG - 1)
        group_counts[get_group_id(0)] = incl;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void compact_offsets(__global const uint* restrict group_counts, __global uint* restrict group_base,
                     __global uint* restrict total, const uint groups)
{
    __local uint scratch[2 * WG];
    const uint sum = wg_exclusive_scan_global_u32(group_counts, group_base, groups, scratch);
    if (get_local_id(0) == 0)
        total[0] = sum;
}

__kernel void compact_scatter(__global const float* restrict in, __global const uint* restrict slot,
                              __global const uint* restrict group_base, __global float* restrict out,
                              const uint n, const float threshold)
{
    const uint gid = get_global_id(0);
    // Bases are per compact_mark group (WG elements), whatever this launch's local size.
    if (gid < n && in[gid] > threshold)
        out[group_base[gid / WG] + slot[gid]] = in[gid];
}
