// Matrix transpose through a padded shared-memory tile, so that both the
// reads and the writes are coalesced and the tile has no bank conflicts.
template <typename T, int TILE>
__global__ void transpose(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
	__shared__ T tile[TILE][TILE + 1];
	int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
	if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
	__syncthreads();
	x = blockIdx.y * TILE + threadIdx.x;
	y = blockIdx.x * TILE + threadIdx.y;
	if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
