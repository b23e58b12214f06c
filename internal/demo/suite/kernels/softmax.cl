// softmax.cl: numerically stable row-wise softmax of a rows x cols matrix,
// y = exp(x - max) / sum(exp(x - max)), one work-group per row. Subtracting
// the row maximum keeps exp from overflowing; both the maximum and the sum
// are work-group reductions from common.h.
#include "common.h"

#ifndef WG
#define WG 64
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void softmax_rows(__global const float* restrict x, __global float* restrict y, const int cols)
{
    __local float scratch[WG];
    const int lid = get_local_id(0);
    __global const float* xr = x + IDX2(get_group_id(0), 0, cols);
    __global float* yr = y + IDX2(get_group_id(0), 0, cols);

    float m = -INFINITY;
    for (int i = lid; i < cols; i += WG)
        m = fmax(m, xr[i]);
    m = wg_reduce_max(scratch, m);

    float s = 0.0f;
    for (int i = lid; i < cols; i += WG)
        s += exp(xr[i] - m);
    const float inv = 1.0f / wg_reduce_sum(scratch, s);

    for (int i = lid; i < cols; i += WG)
        yr[i] = exp(xr[i] - m) * inv;
}
