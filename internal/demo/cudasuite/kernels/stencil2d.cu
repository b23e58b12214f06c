// One Jacobi sweep of the 5-point Laplacian on an NxN grid; the tile and
// its halo are staged in shared memory. Boundary cells are copied.
#define T 16
extern "C" __global__ void jacobi2d(const float* __restrict__ in, float* __restrict__ out, int n) {
	__shared__ float s[T + 2][T + 2];
	int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
	int lx = threadIdx.x + 1, ly = threadIdx.y + 1;
	auto at = [&](int xx, int yy) { return (xx >= 0 && yy >= 0 && xx < n && yy < n) ? in[yy * n + xx] : 0.f; };
	s[ly][lx] = at(x, y);
	if (threadIdx.x == 0) s[ly][0] = at(x - 1, y);
	if (threadIdx.x == T - 1) s[ly][T + 1] = at(x + 1, y);
	if (threadIdx.y == 0) s[0][lx] = at(x, y - 1);
	if (threadIdx.y == T - 1) s[T + 1][lx] = at(x, y + 1);
	__syncthreads();
	if (x >= n || y >= n) return;
	if (x == 0 || y == 0 || x == n - 1 || y == n - 1) { out[y * n + x] = s[ly][lx]; return; }
	out[y * n + x] = 0.25f * (s[ly][lx - 1] + s[ly][lx + 1] + s[ly - 1][lx] + s[ly + 1][lx]);
}
