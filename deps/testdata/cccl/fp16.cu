#include <cuda_fp16.h>
extern "C" __global__ void k(__half* d) { d[0] = __hadd(d[0], d[1]); }
