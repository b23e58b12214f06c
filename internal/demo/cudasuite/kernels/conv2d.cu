// 2D convolution of a WxH single-channel image with a KxK filter (odd K),
// zero padding; the filter is staged in shared memory.
extern "C" __global__ void conv2d(const float* __restrict__ img, const float* __restrict__ filt,
                                  float* __restrict__ out, int w, int h, int k) {
	extern __shared__ float f[];
	int tid = threadIdx.y * blockDim.x + threadIdx.x;
	for (int i = tid; i < k * k; i += blockDim.x * blockDim.y) f[i] = filt[i];
	__syncthreads();
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= w || y >= h) return;
	int r = k / 2;
	float s = 0.f;
	for (int dy = -r; dy <= r; ++dy)
		for (int dx = -r; dx <= r; ++dx) {
			int xx = x + dx, yy = y + dy;
			if (xx >= 0 && yy >= 0 && xx < w && yy < h) s += img[yy * w + xx] * f[(dy + r) * k + dx + r];
		}
	out[y * w + x] = s;
}
