#include <cuda/std/array>
#include <cuda/std/type_traits>
#include <cuda/std/atomic>
#include <cuda/std/cmath>
extern "C" __global__ void k(int* d) { cuda::std::array<int, 2> a{d[0], d[1]}; cuda::std::atomic_ref<int> r(d[3]); r.fetch_add(1); d[2] = a[0] + a[1] + (int)cuda::std::sqrt(4.0f); }
