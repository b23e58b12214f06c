#include <cuda_bf16.h>
extern "C" __global__ void k(__nv_bfloat16* d) { d[0] = __hadd(d[0], d[1]); }
