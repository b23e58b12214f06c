// axpy.cl: BLAS level-1 vector operations on float4. y = a*x + y and
// z = x .* y are done four lanes at a time; axpy_tail finishes the last
// n % 4 elements so that any length works.
__kernel void axpy4(const int n4, const float a, __global const float4* restrict x,
                    __global float4* restrict y)
{
    const int i = get_global_id(0);
    if (i < n4)
        y[i] = fma((float4)(a), x[i], y[i]);
}

__kernel void axpy_tail(const int start, const int n, const float a, __global const float* restrict x,
                        __global float* restrict y)
{
    const int i = start + get_global_id(0);
    if (i < n)
        y[i] = fma(a, x[i], y[i]);
}

// hadamard writes z = x .* y over n elements, vectorised with vload4/vstore4
// and a scalar tail in the item that owns the last partial vector.
__kernel void hadamard(const int n, __global const float* restrict x, __global const float* restrict y,
                       __global float* restrict z)
{
    const int i = get_global_id(0);
    if (4 * i + 3 < n) {
        vstore4(vload4(i, x) * vload4(i, y), i, z);
    } else {
        for (int j = 4 * i; j < n; ++j)
            z[j] = x[j] * y[j];
    }
}
