// reduce.cl: two-stage sum reduction. reduce_partial has each item
// accumulate a grid-strided slice (so a fixed, small number of groups covers
// any n), then tree-reduces the group in __local memory into one partial sum
// per group; reduce_final runs as a single group over those partials. The
// scratch array is a __local kernel argument sized by the host.
__kernel void reduce_partial(__global const float* restrict in, const int n,
                             __global float* restrict partial, __local float* scratch)
{
    const int lid = get_local_id(0);
    const int stride = get_global_size(0);
    float acc = 0.0f;
    for (int i = get_global_id(0); i < n; i += stride)
        acc += in[i];
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}

__kernel void reduce_final(__global const float* restrict partial, const int count,
                           __global float* restrict result, __local float* scratch)
{
    const int lid = get_local_id(0);
    float acc = 0.0f;
    for (int i = lid; i < count; i += get_local_size(0))
        acc += partial[i];
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        result[0] = scratch[0];
}
