// sgemv.cl: y = alpha*A*x + beta*y for a row-major M x N matrix. One
// work-group per row: the items stride over the row with float4 loads
// (consecutive items touch consecutive vectors) and combine their partial
// dot products with a work-group tree reduction from common.h.
#include "common.h"

#ifndef WG
#define WG 64
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sgemv_rows(const int M, const int N, const float alpha, __global const float* restrict A,
                __global const float* restrict x, const float beta, __global float* restrict y)
{
    __local float scratch[WG];
    const int row = get_group_id(0);
    const int lid = get_local_id(0);
    __global const float* a = A + IDX2(row, 0, N);

    float acc = 0.0f;
    const int n4 = N / 4;
    for (int i = lid; i < n4; i += WG)
        acc += dot(vload4(i, a), vload4(i, x)); // vload4 needs only float alignment
    for (int i = 4 * n4 + lid; i < N; i += WG)
        acc = fma(a[i], x[i], acc);

    const float sum = wg_reduce_sum(scratch, acc);
    if (lid == 0 && row < M)
        y[row] = alpha * sum + beta * y[row];
}
