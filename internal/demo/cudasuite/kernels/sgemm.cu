// C = alpha*A*B + beta*C with square shared-memory tiles; A is MxK, B KxN,
// all row-major. Instantiated per tile size through name expressions.
template <int TILE>
__global__ void sgemm_tiled(int M, int N, int K, float alpha, const float* __restrict__ A,
                            const float* __restrict__ B, float beta, float* __restrict__ C) {
	__shared__ float As[TILE][TILE];
	__shared__ float Bs[TILE][TILE + 1];
	int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
	float acc = 0.f;
	for (int t = 0; t < K; t += TILE) {
		As[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? A[row * K + t + threadIdx.x] : 0.f;
		Bs[threadIdx.y][threadIdx.x] = (col < N && t + threadIdx.y < K) ? B[(t + threadIdx.y) * N + col] : 0.f;
		__syncthreads();
#pragma unroll
		for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
		__syncthreads();
	}
	if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
