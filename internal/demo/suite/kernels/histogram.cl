// histogram.cl: 256-bin byte histogram. Each work-group privatises the
// histogram in __local memory (cheap local atomics, little contention on
// the global bins), reads its grid-strided share as uchar4, then merges
// with one global atomic_add per non-empty bin.
#ifndef WG
#define WG 64
#endif
#define BINS 256

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void histogram256(__global const uchar* restrict data, const uint n, __global uint* restrict hist)
{
    __local uint lh[BINS];
    const uint lid = get_local_id(0);
    for (uint b = lid; b < BINS; b += WG)
        lh[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    const uint stride = get_global_size(0);
    const uint n4 = n / 4;
    for (uint i = get_global_id(0); i < n4; i += stride) {
        const uchar4 v = vload4(i, data);
        atomic_inc(&lh[v.x]);
        atomic_inc(&lh[v.y]);
        atomic_inc(&lh[v.z]);
        atomic_inc(&lh[v.w]);
    }
    for (uint i = 4 * n4 + get_global_id(0); i < n; i += stride)
        atomic_inc(&lh[data[i]]);
    barrier(CLK_LOCAL_MEM_FENCE);

    for (uint b = lid; b < BINS; b += WG)
        if (lh[b] != 0)
            atomic_add(&hist[b], lh[b]);
}
