#include "common.cuh"

// Layer normalisation over each row, with learned gain and bias.
extern "C" __global__ void layernorm(const float* __restrict__ x, const float* __restrict__ gamma,
                                     const float* __restrict__ beta, float* __restrict__ y, int cols, float eps) {
	__shared__ float shm[32];
	const float* row = x + blockIdx.x * cols;
	float s = 0.f;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) s += row[c];
	float mean = block_sum(s, shm) / cols;
	float v = 0.f;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) { float d = row[c] - mean; v += d * d; }
	float rstd = rsqrtf(block_sum(v, shm) / cols + eps);
	for (int c = threadIdx.x; c < cols; c += blockDim.x)
		y[blockIdx.x * cols + c] = (row[c] - mean) * rstd * gamma[c] + beta[c];
}
