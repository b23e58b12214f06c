// Inclusive prefix sum of ints in three launches: scan each block in
// shared memory (Hillis-Steele), scan the block totals, add them back.
#define BLOCK 256
extern "C" __global__ void scan_blocks(const int* in, int* out, int* sums, int n) {
	__shared__ int buf[2][BLOCK];
	int i = blockIdx.x * BLOCK + threadIdx.x;
	int p = 0;
	buf[0][threadIdx.x] = i < n ? in[i] : 0;
	__syncthreads();
	for (int off = 1; off < BLOCK; off <<= 1) {
		int v = buf[p][threadIdx.x];
		if (threadIdx.x >= off) v += buf[p][threadIdx.x - off];
		buf[1 - p][threadIdx.x] = v;
		p = 1 - p;
		__syncthreads();
	}
	if (i < n) out[i] = buf[p][threadIdx.x];
	if (threadIdx.x == BLOCK - 1) sums[blockIdx.x] = buf[p][threadIdx.x];
}
extern "C" __global__ void scan_sums(int* sums, int nblocks) {
	if (threadIdx.x == 0 && blockIdx.x == 0)
		for (int b = 1; b < nblocks; ++b) sums[b] += sums[b - 1];
}
extern "C" __global__ void scan_add(int* out, const int* sums, int n) {
	int i = blockIdx.x * BLOCK + threadIdx.x;
	if (blockIdx.x > 0 && i < n) out[i] += sums[blockIdx.x - 1];
}
