#include <thrust/tuple.h>
#include <thrust/functional.h>
extern "C" __global__ void k(int* d) { thrust::tuple<int, int> t(d[0], d[1]); d[2] = thrust::get<0>(t) + thrust::get<1>(t); }
