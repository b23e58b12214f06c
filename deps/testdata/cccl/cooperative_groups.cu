#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(int* d) { auto b = cg::this_thread_block(); auto w = cg::tiled_partition<32>(b); d[threadIdx.x] = cg::reduce(w, d[threadIdx.x], cg::plus<int>()); b.sync(); }
