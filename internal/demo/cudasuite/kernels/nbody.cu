// One n-body step: every body's acceleration from all others (softened),
// bodies streamed through shared memory one block-sized tile at a time.
extern "C" __global__ void nbody_step(const float4* __restrict__ pos, float4* __restrict__ vel,
                                      float4* __restrict__ newpos, int n, float dt, float eps2) {
	extern __shared__ float4 tile[];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float4 p = i < n ? pos[i] : make_float4(0, 0, 0, 0);
	float3 a = {0, 0, 0};
	for (int t = 0; t < n; t += blockDim.x) {
		int j = t + threadIdx.x;
		tile[threadIdx.x] = j < n ? pos[j] : make_float4(0, 0, 0, 0);
		__syncthreads();
		for (int k = 0; k < blockDim.x && t + k < n; ++k) {
			float4 q = tile[k];
			float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
			float d2 = dx * dx + dy * dy + dz * dz + eps2;
			float inv = rsqrtf(d2);
			float s = q.w * inv * inv * inv;
			a.x += dx * s; a.y += dy * s; a.z += dz * s;
		}
		__syncthreads();
	}
	if (i >= n) return;
	float4 v = vel[i];
	v.x += a.x * dt; v.y += a.y * dt; v.z += a.z * dt;
	vel[i] = v;
	newpos[i] = make_float4(p.x + v.x * dt, p.y + v.y * dt, p.z + v.z * dt, p.w);
}
