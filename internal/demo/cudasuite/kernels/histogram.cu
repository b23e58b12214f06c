// 256-bin histogram of bytes: per-block bins in shared memory, merged
// into the global bins with atomics.
extern "C" __global__ void histogram256(const unsigned char* __restrict__ data, unsigned* __restrict__ bins, int n) {
	__shared__ unsigned local[256];
	for (int i = threadIdx.x; i < 256; i += blockDim.x) local[i] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&local[data[i]], 1u);
	__syncthreads();
	for (int i = threadIdx.x; i < 256; i += blockDim.x) atomicAdd(&bins[i], local[i]);
}
