#include "common.cuh"

// y = A*x for a CSR matrix, one warp per row.
extern "C" __global__ void spmv_csr(const int* __restrict__ rowptr, const int* __restrict__ colidx,
                                    const float* __restrict__ vals, const float* __restrict__ x,
                                    float* __restrict__ y, int rows) {
	int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
	if (warp >= rows) return;
	float s = 0.f;
	for (int j = rowptr[warp] + lane; j < rowptr[warp + 1]; j += 32) s += vals[j] * x[colidx[j]];
	s = warp_sum(s);
	if (lane == 0) y[warp] = s;
}
