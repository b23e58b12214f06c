#include <cub/block/block_reduce.cuh>
extern "C" __global__ void k(const int* in, int* out) {
  using R = cub::BlockReduce<int, 128>;
  __shared__ typename R::TempStorage t;
  int s = R(t).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) *out = s;
}
