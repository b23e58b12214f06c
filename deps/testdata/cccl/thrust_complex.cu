#include <thrust/complex.h>
extern "C" __global__ void k(float* d) { thrust::complex<float> c(d[0], d[1]); d[2] = thrust::abs(c * c); }
