// spmv_ell.cl: y = A*x for a matrix in ELLPACK format stored column-major
// (entry k of row r at k*rows + r), so adjacent work-items read adjacent
// words. Rows shorter than width are padded at their end with column -1.
__kernel void spmv_ell(const int rows, const int width, __global const int* restrict cols,
                       __global const float* restrict vals, __global const float* restrict x,
                       __global float* restrict y)
{
    const int row = get_global_id(0);
    if (row >= rows)
        return;
    float acc = 0.0f;
    for (int k = 0; k < width; ++k) {
        const int c = cols[k * rows + row];
        if (c < 0)
            break; // padding only follows the row's real entries
        acc = fma(vals[k * rows + row], x[c], acc);
    }
    y[row] = acc;
}
