// One step of a bitonic sorting network over n = 2^k unsigned keys; the
// host launches it for every (k, j) pair.
extern "C" __global__ void bitonic_step(unsigned* keys, int j, int k, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int l = i ^ j;
	if (i >= n || l <= i) return;
	unsigned a = keys[i], b = keys[l];
	bool up = (i & k) == 0;
	if ((a > b) == up) { keys[i] = b; keys[l] = a; }
}
