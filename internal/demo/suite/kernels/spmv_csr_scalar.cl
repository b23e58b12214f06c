// spmv_csr_scalar.cl: y = A*x for a CSR matrix, one work-item per row.
// Simple and good for short, even rows; long rows serialise in one item.
__kernel void spmv_csr_scalar(const int rows, __global const int* restrict rowptr,
                              __global const int* restrict colidx, __global const float* restrict vals,
                              __global const float* restrict x, __global float* restrict y)
{
    const int row = get_global_id(0);
    if (row >= rows)
        return;
    float acc = 0.0f;
    const int end = rowptr[row + 1];
    for (int j = rowptr[row]; j < end; ++j)
        acc = fma(vals[j], x[colidx[j]], acc);
    y[row] = acc;
}
