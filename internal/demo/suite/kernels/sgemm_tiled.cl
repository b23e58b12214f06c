// sgemm_tiled.cl: C = alpha*A*B + beta*C (row-major) with TILE x TILE blocks
// of A and B staged in __local memory, so each global element is loaded once
// per work-group instead of once per work-item. Edges are zero-padded, so
// M, N and K need not be multiples of TILE; the global size must be.
#ifndef TILE
#define TILE 8
#endif

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void sgemm_tiled(const int M, const int N, const int K, const float alpha,
                 __global const float* restrict A, __global const float* restrict B,
                 const float beta, __global float* restrict C)
{
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE + 1]; // +1: Bs is read down columns; padding avoids bank conflicts on GPUs
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int col = get_group_id(0) * TILE + tx;
    const int row = get_group_id(1) * TILE + ty;

    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        const int ka = t + tx; // column of A this item stages
        const int kb = t + ty; // row of B this item stages
        As[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc = fma(As[ty][k], Bs[k][tx], acc);
        barrier(CLK_LOCAL_MEM_FENCE); // the next iteration overwrites the tiles
    }
    if (row < M && col < N)
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
