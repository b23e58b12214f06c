#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_reduce.cuh>
extern "C" __global__ void k(int* d) {
  using S = cub::BlockScan<int, 128>;
  __shared__ typename S::TempStorage t;
  __shared__ typename cub::WarpReduce<int>::TempStorage w[4];
  int x = d[threadIdx.x];
  S(t).ExclusiveSum(x, x);
  d[threadIdx.x] = x + cub::WarpReduce<int>(w[threadIdx.x / 32]).Sum(x);
}
