// spmv_csr_vector.cl: y = A*x for a CSR matrix, LANES work-items per row
// ("vector" or warp-per-row CSR). The lanes of a row read its nonzeros
// contiguously and combine partial sums with a segmented tree reduction in
// __local memory; this balances irregular rows far better than one item
// per row. LANES must be a power of two dividing WG.
#ifndef LANES
#define LANES 8
#endif
#ifndef WG
#define WG 64
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void spmv_csr_vector(const int rows, __global const int* restrict rowptr,
                     __global const int* restrict colidx, __global const float* restrict vals,
                     __global const float* restrict x, __global float* restrict y)
{
    __local float partial[WG];
    const int lid = get_local_id(0);
    const int lane = lid & (LANES - 1);
    const int row = get_global_id(0) / LANES;

    float acc = 0.0f;
    if (row < rows) {
        const int end = rowptr[row + 1];
        for (int j = rowptr[row] + lane; j < end; j += LANES)
            acc = fma(vals[j], x[colidx[j]], acc);
    }
    partial[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    // Barriers rather than warp-synchronous code: portable to any SIMD width.
    for (int s = LANES / 2; s > 0; s >>= 1) {
        if (lane < s)
            partial[lid] += partial[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane == 0 && row < rows)
        y[row] = partial[lid];
}
