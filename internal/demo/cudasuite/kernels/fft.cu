#include "common.cuh"

// Radix-2 decimation-in-time FFT of 1024 complex points, one block of 512
// threads per row, in shared memory; a batch of rows.
#define N 1024
#define LOGN 10
extern "C" __global__ void fft1024(const cplx* __restrict__ in, cplx* __restrict__ out) {
	__shared__ cplx s[N];
	const cplx* src = in + blockIdx.x * N;
	for (int i = threadIdx.x; i < N; i += blockDim.x) s[__brev(i) >> (32 - LOGN)] = src[i];
	__syncthreads();
	for (int len = 2; len <= N; len <<= 1) {
		int half = len >> 1;
		int t = threadIdx.x;
		int grp = t / half, pos = t % half;
		int a = grp * len + pos, b = a + half;
		float ang = -2.f * 3.14159265358979f * pos / len;
		float sn, cs;
		sincosf(ang, &sn, &cs);
		cplx w = {cs, sn};
		cplx u = s[a], v = cmul(w, s[b]);
		s[a] = cadd(u, v);
		s[b] = csub(u, v);
		__syncthreads();
	}
	for (int i = threadIdx.x; i < N; i += blockDim.x) out[blockIdx.x * N + i] = s[i];
}
