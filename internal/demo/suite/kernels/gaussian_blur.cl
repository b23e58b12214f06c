// gaussian_blur.cl: separable Gaussian blur with clamp-to-edge borders, as
// two passes: blur_rows stages a row segment plus its RADIUS halo in
// __local memory; blur_cols reads columns straight from global memory
// (adjacent items read adjacent words, which coalesces). 2*(2R+1) taps per
// pixel instead of (2R+1)^2 for the direct 2-D filter.
#include "common.h"

#ifndef RADIUS
#define RADIUS 4
#endif
#ifndef WG
#define WG 64
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void blur_rows(__global const float* restrict src, __global float* restrict dst,
               __constant float* weights, const int w, const int h)
{
    __local float line[WG + 2 * RADIUS];
    const int lid = get_local_id(0);
    const int y = get_global_id(1);
    const int x0 = get_group_id(0) * WG - RADIUS;
    for (int i = lid; i < WG + 2 * RADIUS; i += WG)
        line[i] = load_clamped(src, x0 + i, y, w, h);
    barrier(CLK_LOCAL_MEM_FENCE);

    const int x = get_global_id(0);
    if (x >= w || y >= h)
        return;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k <= 2 * RADIUS; ++k)
        acc = fma(weights[k], line[lid + k], acc);
    dst[IDX2(y, x, w)] = acc;
}

__kernel void blur_cols(__global const float* restrict src, __global float* restrict dst,
                        __constant float* weights, const int w, const int h)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= w || y >= h)
        return;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k <= 2 * RADIUS; ++k)
        acc = fma(weights[k], load_clamped(src, x, y + k - RADIUS, w, h), acc);
    dst[IDX2(y, x, w)] = acc;
}
