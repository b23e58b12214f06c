#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
extern "C" __global__ void k(int* d) {
  using S = cub::BlockRadixSort<int, 128, 4>;
  __shared__ typename S::TempStorage t;
  int v[4];
  cub::LoadDirectBlocked(threadIdx.x, d, v);
  S(t).Sort(v);
  cub::StoreDirectBlocked(threadIdx.x, d, v);
}
