#include <cuda/barrier>
#include <cuda/ptx>
extern "C" __global__ void k(int* d) { __shared__ cuda::barrier<cuda::thread_scope_block> b; if (threadIdx.x == 0) init(&b, blockDim.x); __syncthreads(); b.arrive_and_wait(); d[0] = 1; }
