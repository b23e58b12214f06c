// European call and put prices by Black-Scholes, one option per thread.
__device__ __forceinline__ float cnd(float d) { return 0.5f * erfcf(-d * 0.70710678118654752f); }

extern "C" __global__ void black_scholes(const float* __restrict__ S, const float* __restrict__ K,
                                         const float* __restrict__ T, float r, float v,
                                         float* __restrict__ call, float* __restrict__ put, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	float sq = sqrtf(T[i]);
	float d1 = (logf(S[i] / K[i]) + (r + 0.5f * v * v) * T[i]) / (v * sq);
	float d2 = d1 - v * sq;
	float e = expf(-r * T[i]);
	call[i] = S[i] * cnd(d1) - K[i] * e * cnd(d2);
	put[i] = K[i] * e * cnd(-d2) - S[i] * cnd(-d1);
}
