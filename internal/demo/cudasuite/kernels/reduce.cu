#include "common.cuh"

// Two-pass sum: each block reduces a grid-strided slice to one partial,
// then one block reduces the partials.
template <typename T, int BLOCK>
__global__ void reduce_sum(const T* __restrict__ in, T* __restrict__ out, int n) {
	__shared__ T shm[BLOCK / 32];
	T v = 0;
	for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) v += in[i];
	v = block_sum(v, shm);
	if (threadIdx.x == 0) out[blockIdx.x] = v;
}
