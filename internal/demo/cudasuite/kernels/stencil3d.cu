// 7-point heat-equation step on an NxNxN grid, one thread per cell.
extern "C" __global__ void heat3d(const float* __restrict__ in, float* __restrict__ out, int n, float alpha) {
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y, z = blockIdx.z;
	if (x >= n || y >= n || z >= n) return;
	int i = (z * n + y) * n + x;
	if (x == 0 || y == 0 || z == 0 || x == n - 1 || y == n - 1 || z == n - 1) { out[i] = in[i]; return; }
	float lap = in[i - 1] + in[i + 1] + in[i - n] + in[i + n] + in[i - n * n] + in[i + n * n] - 6.f * in[i];
	out[i] = in[i] + alpha * lap;
}
