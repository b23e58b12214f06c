// Helpers shared by several kernels of the suite. It is read from disk
// through -I, so editing it must rebuild every program that includes it.
#pragma once

struct cplx { float re, im; };

__device__ __forceinline__ cplx cmul(cplx a, cplx b) {
	return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
__device__ __forceinline__ cplx cadd(cplx a, cplx b) { return {a.re + b.re, a.im + b.im}; }
__device__ __forceinline__ cplx csub(cplx a, cplx b) { return {a.re - b.re, a.im - b.im}; }

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
	return v;
}
template <typename T>
__device__ __forceinline__ T warp_max(T v) {
	for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_down_sync(0xffffffffu, v, o));
	return v;
}

// block_sum reduces v over the block; every thread gets the total. shm
// holds one value per warp.
template <typename T>
__device__ T block_sum(T v, T* shm) {
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	v = warp_sum(v);
	if (lane == 0) shm[warp] = v;
	__syncthreads();
	int nw = (blockDim.x + 31) >> 5;
	T t = threadIdx.x < nw ? shm[threadIdx.x] : T(0);
	if (warp == 0) t = warp_sum(t);
	if (threadIdx.x == 0) shm[0] = t;
	__syncthreads();
	T r = shm[0];
	__syncthreads();
	return r;
}
