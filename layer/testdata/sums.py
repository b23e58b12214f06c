# sums builds two OpenCL programs with pyopencl, one including a header from
# the working directory, runs them, and prints results that depend on
# nothing but the kernels: the layer's tests compare them across runs.
import os

import numpy as np
import pyopencl as cl

ctx = cl.Context(cl.get_platforms()[0].get_devices())
queue = cl.CommandQueue(ctx)

scale_src = """
#include "scale.h"
kernel void scale(global float *a) { int i = get_global_id(0); a[i] = a[i] * SCALE + 1.0f; }
"""
sum_src = """
kernel void sumsq(global const float *a, global float *out, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * a[i];
    out[0] = s;
}
"""

n = 256
a = np.arange(n, dtype=np.float32)
mf = cl.mem_flags
buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a)
out = cl.Buffer(ctx, mf.WRITE_ONLY, 4)

scale = cl.Program(ctx, scale_src).build()
sums = cl.Program(ctx, sum_src).build(options=["-cl-mad-enable"])
k = scale.scale
k(queue, (n,), None, buf)
sums.sumsq(queue, (1,), None, buf, out, np.int32(n))
res = np.empty(1, dtype=np.float32)
cl.enqueue_copy(queue, res, out)
cl.enqueue_copy(queue, a, buf)
print("scaled sum", float(a.sum()))
print("sum of squares", float(res[0]))
print("kernel's program is the application's", k.program.int_ptr == scale.int_ptr)
print("source kept", scale.get_info(cl.program_info.SOURCE) == scale_src)
print("build status", scale.get_build_info(ctx.devices[0], cl.program_build_info.STATUS))
