// layernorm.cl: layer normalisation forward pass over the rows of a
// rows x cols matrix: y = (x - mean) * rstd * gamma + beta with
// rstd = 1/sqrt(var + eps). One work-group per row; the variance uses a
// second pass over (x - mean)^2, which is more accurate in float than
// E[x^2] - mean^2. mean and rstd are saved per row, as a training framework
// keeps them for the backward pass.
#include "common.h"

#ifndef WG
#define WG 64
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void layernorm_fwd(__global const float* restrict x, __global const float* restrict gamma,
                   __global const float* restrict beta, __global float* restrict y,
                   __global float* restrict mean_out, __global float* restrict rstd_out, const int cols,
                   const float eps, __local float* scratch)
{
    // scratch (WG floats) is a kernel argument rather than a kernel-scope
    // __local array: with the array, PoCL 3.1's pthread device let
    // concurrent work-groups of this kernel share it (wrong rows, seen
    // only with more than one worker thread).
    const int row = get_group_id(0);
    const int lid = get_local_id(0);
    __global const float* xr = x + IDX2(row, 0, cols);

    float s = 0.0f;
    for (int i = lid; i < cols; i += WG)
        s += xr[i];
    const float mean = wg_reduce_sum(scratch, s) / (float)cols;

    float v = 0.0f;
    for (int i = lid; i < cols; i += WG) {
        const float d = xr[i] - mean;
        v = fma(d, d, v);
    }
    const float rstd = rsqrt(wg_reduce_sum(scratch, v) / (float)cols + eps);

    for (int i = lid; i < cols; i += WG)
        y[IDX2(row, i, cols)] = fma((xr[i] - mean) * rstd, gamma[i], beta[i]);
    if (lid == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}
