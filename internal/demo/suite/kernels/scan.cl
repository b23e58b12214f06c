// scan.cl: exclusive prefix sum of uints of any length, Blelloch style.
// scan_blocks scans 2*WG elements per group in __local memory (up-sweep
// builds a sum tree, down-sweep distributes prefixes) and writes each
// block's total; the host scans those totals with the same kernel and
// add_offsets adds each block's prefix back. Two levels cover
// (2*WG)^2 = 16384 elements with WG = 64.
#ifndef WG
#define WG 64
#endif
#define BLOCK (2 * WG)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scan_blocks(__global const uint* restrict in, __global uint* restrict out,
                 __global uint* restrict block_sums, const uint n)
{
    __local uint t[BLOCK];
    const uint lid = get_local_id(0);
    const uint base = get_group_id(0) * BLOCK;
    t[lid] = base + lid < n ? in[base + lid] : 0;
    t[lid + WG] = base + lid + WG < n ? in[base + lid + WG] : 0;

    uint offset = 1;
    for (uint d = WG; d > 0; d >>= 1) { // up-sweep
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < d) {
            const uint a = offset * (2 * lid + 1) - 1;
            t[a + offset] += t[a];
        }
        offset <<= 1;
    }
    if (lid == 0) {
        block_sums[get_group_id(0)] = t[BLOCK - 1];
        t[BLOCK - 1] = 0;
    }
    for (uint d = 1; d < BLOCK; d <<= 1) { // down-sweep
        offset >>= 1;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < d) {
            const uint a = offset * (2 * lid + 1) - 1;
            const uint b = a + offset;
            const uint left = t[a];
            t[a] = t[b];
            t[b] += left;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (base + lid < n)
        out[base + lid] = t[lid];
    if (base + lid + WG < n)
        out[base + lid + WG] = t[lid + WG];
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void add_offsets(__global uint* restrict data, __global const uint* restrict offsets, const uint n)
{
    const uint base = get_group_id(0) * BLOCK;
    const uint lid = get_local_id(0);
    const uint off = offsets[get_group_id(0)];
    if (base + lid < n)
        data[base + lid] += off;
    if (base + lid + WG < n)
        data[base + lid + WG] += off;
}
