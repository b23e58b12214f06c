// conv1d.cl: 1-D convolution out[i] = sum_k taps[k] * in[i + k - RADIUS]
// with zero padding. Each work-group stages WG + 2*RADIUS inputs in __local
// memory, so neighbouring outputs share their loads; the taps sit in
// __constant memory, which is broadcast-friendly on GPUs.
#ifndef RADIUS
#define RADIUS 4
#endif
#ifndef WG
#define WG 64
#endif
#define SPAN (WG + 2 * RADIUS)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv1d(__global const float* restrict in, __constant float* taps, __global float* restrict out,
            const int n)
{
    __local float tile[SPAN];
    const int lid = get_local_id(0);
    const int first = get_group_id(0) * WG - RADIUS;
    for (int i = lid; i < SPAN; i += WG) {
        const int g = first + i;
        tile[i] = (g >= 0 && g < n) ? in[g] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const int gid = get_global_id(0);
    if (gid >= n)
        return;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k <= 2 * RADIUS; ++k)
        acc = fma(taps[k], tile[lid + k], acc);
    out[gid] = acc;
}
