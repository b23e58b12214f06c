#include "common.cuh"

// Row-wise numerically stable softmax: one block per row.
template <int BLOCK>
__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
	__shared__ float shm[BLOCK / 32];
	const float* row = x + blockIdx.x * cols;
	float m = -__int_as_float(0x7f800000); // -inf
	for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
	m = warp_max(m);
	if ((threadIdx.x & 31) == 0) shm[threadIdx.x >> 5] = m;
	__syncthreads();
	m = shm[0];
	for (int w = 1; w < BLOCK / 32; ++w) m = fmaxf(m, shm[w]);
	__syncthreads();
	float s = 0.f;
	for (int c = threadIdx.x; c < cols; c += BLOCK) s += __expf(row[c] - m);
	s = block_sum(s, shm);
	for (int c = threadIdx.x; c < cols; c += BLOCK) y[blockIdx.x * cols + c] = __expf(row[c] - m) / s;
}
