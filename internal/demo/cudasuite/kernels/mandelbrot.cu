// Escape-time iteration counts over a WxH window of the complex plane.
extern "C" __global__ void mandelbrot(int* __restrict__ iters, int w, int h, float x0, float y0, float dx, float dy, int maxit) {
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= w || y >= h) return;
	float cr = x0 + x * dx, ci = y0 + y * dy;
	float zr = 0.f, zi = 0.f;
	int it = 0;
	while (it < maxit && zr * zr + zi * zi <= 4.f) {
		float t = zr * zr - zi * zi + cr;
		zi = 2.f * zr * zi + ci;
		zr = t;
		++it;
	}
	iters[y * w + x] = it;
}
