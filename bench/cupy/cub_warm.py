"""CuPy's warm path on the CUB kernel of cuda/scaninput_test.go (issue 18).

Each run is a new process: it makes the CUDA context, then times RawModule
(CuPy's on-disk cache, keyed by source and options, checks no header), the
function lookup and one launch to its completion. Usage:
    python3 cub_warm.py DIR [FILE.cu]   # DIR holds mine.h; CUPY_CACHE_DIR picks the cache
With FILE.cu (a kernel k(int* d) of deps/testdata/cccl, as TestCCCLNewProcess
runs them), that source instead, launched as one block of 128 threads on 512
ints. Prints one line: {"ms": ...}.
"""
import json
import sys
import time

import cupy as cp

SOURCE = r'''#include "mine.h"
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void k(const int* in, int* out) {
  using R = cub::BlockReduce<int, 128>;
  __shared__ typename R::TempStorage t;
  int s = R(t).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) *out = s + MINE;
}
'''

inc = "/usr/local/cuda/include"
code, args = SOURCE, None
if len(sys.argv) > 2:
    with open(sys.argv[2]) as f:
        code = f.read()
    args = (cp.ones(512, dtype=cp.int32),)
else:
    data = cp.ones(128, dtype=cp.int32)
    out = cp.zeros(1, dtype=cp.int32)
    args = (data, out)
cp.cuda.Device().synchronize()
start = time.perf_counter()
mod = cp.RawModule(code=code, options=("-I" + inc + "/cccl", "-I" + inc, "-I" + sys.argv[1], "-std=c++17"))
mod.get_function("k")((1,), (128,), args)
cp.cuda.Device().synchronize()
ms = (time.perf_counter() - start) * 1000
if len(sys.argv) == 2:
    assert int(out.get()[0]) == 129, out
print(json.dumps({"ms": round(ms, 3)}))
