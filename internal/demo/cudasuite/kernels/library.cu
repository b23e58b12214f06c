#include "common.cuh"

// A kernel library of realistic size: a register-tiled GEMM and fused
// epilogues, instantiated for many tile shapes and activations through
// name expressions, as a library's autotuner would. Each block computes a
// BM x BN tile of C with THREADS = (BM/TM)*(BN/TN) threads, each a TM x TN
// micro-tile held in registers.
struct Identity { __device__ float operator()(float x) const { return x; } };
struct Relu { __device__ float operator()(float x) const { return fmaxf(x, 0.f); } };
struct Gelu {
	__device__ float operator()(float x) const { return 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }
};
struct Silu { __device__ float operator()(float x) const { return x / (1.f + __expf(-x)); } };

template <int BM, int BN, int BK, int TM, int TN, typename Act>
__global__ void gemm_bias_act(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                              const float* __restrict__ bias, float* __restrict__ C) {
	constexpr int TX = BN / TN, TY = BM / TM, THREADS = TX * TY;
	__shared__ float As[BK][BM + 1];
	__shared__ float Bs[BK][BN + 1];
	int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
	int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
	float acc[TM][TN];
#pragma unroll
	for (int i = 0; i < TM; ++i)
#pragma unroll
		for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
	for (int k0 = 0; k0 < K; k0 += BK) {
		for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
			int r = e / BK, c = e % BK;
			As[c][r] = (row0 + r < M && k0 + c < K) ? A[(row0 + r) * K + k0 + c] : 0.f;
		}
		for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
			int r = e / BN, c = e % BN;
			Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(k0 + r) * N + col0 + c] : 0.f;
		}
		__syncthreads();
#pragma unroll
		for (int k = 0; k < BK; ++k) {
			float a[TM], b[TN];
#pragma unroll
			for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
#pragma unroll
			for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx * TN + j];
#pragma unroll
			for (int i = 0; i < TM; ++i)
#pragma unroll
				for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
		}
		__syncthreads();
	}
	Act act;
#pragma unroll
	for (int i = 0; i < TM; ++i)
#pragma unroll
		for (int j = 0; j < TN; ++j) {
			int r = row0 + ty * TM + i, c = col0 + tx * TN + j;
			if (r < M && c < N) C[r * N + c] = act(acc[i][j] + bias[c]);
		}
}

// Row-wise reductions and elementwise maps of several widths.
template <int BLOCK, typename Act>
__global__ void bias_act_rows(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y, int cols) {
	Act act;
	for (int c = threadIdx.x; c < cols; c += BLOCK) y[blockIdx.x * cols + c] = act(x[blockIdx.x * cols + c] + bias[c]);
}
template <int BLOCK>
__global__ void row_sums(const float* __restrict__ x, float* __restrict__ y, int cols) {
	__shared__ float shm[32];
	float s = 0.f;
	for (int c = threadIdx.x; c < cols; c += BLOCK) s += x[blockIdx.x * cols + c];
	s = block_sum(s, shm);
	if (threadIdx.x == 0) y[blockIdx.x] = s;
}
