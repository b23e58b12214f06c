// sgemm_naive.cl: C = alpha*A*B + beta*C for row-major single-precision
// matrices, one work-item per element of C and no data reuse. It is the
// baseline the tiled kernel is measured against.
__kernel void sgemm_naive(const int M, const int N, const int K, const float alpha,
                          __global const float* restrict A, __global const float* restrict B,
                          const float beta, __global float* restrict C)
{
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc = fma(A[row * K + k], B[k * N + col], acc);
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
