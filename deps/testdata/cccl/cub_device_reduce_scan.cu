#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
extern "C" __global__ void k(int* d) { d[0] = 1; }
