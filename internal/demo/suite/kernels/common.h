// common.h: helpers shared by several programs of the kcache suite.
//
// Indexing, clamp-to-edge image access and work-group collectives over
// dimension 0. The collectives contain barriers, so every work-item of the
// group must reach them, and they assume a power-of-two work-group size.
#ifndef KCACHE_COMMON_H
#define KCACHE_COMMON_H

// IDX2 is the row-major linear index of (row, col) with leading dimension ld.
#define IDX2(row, col, ld) ((size_t)(row) * (size_t)(ld) + (size_t)(col))

// load_clamped reads img(x, y), replicating the border outside the image.
static inline float load_clamped(__global const float* img, int x, int y, int w, int h)
{
    return img[IDX2(clamp(y, 0, h - 1), clamp(x, 0, w - 1), w)];
}

// luma_rgba8 converts an 8-bit RGBA pixel to Rec. 601 luma in [0, 1].
static inline float luma_rgba8(uchar4 p)
{
    const float4 f = convert_float4(p) * (1.0f / 255.0f);
    return dot(f.xyz, (float3)(0.299f, 0.587f, 0.114f));
}

// wg_reduce_sum returns the sum of v over the work-group to every item.
// scratch holds get_local_size(0) floats.
static inline float wg_reduce_sum(__local float* scratch, float v)
{
    const uint lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = get_local_size(0) >> 1; s > 0; s >>= 1) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE); // scratch may be reused right after
    return r;
}

// wg_reduce_max returns the maximum of v over the work-group to every item.
// scratch holds get_local_size(0) floats.
static inline float wg_reduce_max(__local float* scratch, float v)
{
    const uint lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = get_local_size(0) >> 1; s > 0; s >>= 1) {
        if (lid < s)
            scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

// wg_inclusive_scan_u32 is a Hillis-Steele inclusive prefix sum of one value
// per work-item. scratch holds 2*get_local_size(0) uints (double buffer, so
// each step reads a complete previous step without a read/write race).
static inline uint wg_inclusive_scan_u32(__local uint* scratch, uint v)
{
    const uint lid = get_local_id(0);
    const uint n = get_local_size(0);
    uint cur = 0;
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < n; off <<= 1) {
        const uint prev = cur;
        cur ^= 1;
        uint x = scratch[prev * n + lid];
        if (lid >= off)
            x += scratch[prev * n + lid - off];
        scratch[cur * n + lid] = x;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const uint r = scratch[cur * n + lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

// wg_exclusive_scan_global_u32 writes the exclusive prefix sum of in[0:n)
// to out[0:n) using one work-group: each item scans a contiguous chunk
// serially, and the chunk totals are combined with a work-group scan. It
// returns the grand total to every item. in and out may alias.
static inline uint wg_exclusive_scan_global_u32(__global const uint* in, __global uint* out,
                                                uint n, __local uint* scratch)
{
    const uint lid = get_local_id(0);
    const uint wg = get_local_size(0);
    const uint chunk = (n + wg - 1) / wg;
    const uint begin = min(lid * chunk, n);
    const uint end = min(begin + chunk, n);
    uint sum = 0;
    for (uint i = begin; i < end; ++i)
        sum += in[i];
    const uint incl = wg_inclusive_scan_u32(scratch, sum);
    uint run = incl - sum;
    for (uint i = begin; i < end; ++i) {
        const uint v = in[i];
        out[i] = run;
        run += v;
    }
    if (lid == wg - 1)
        scratch[0] = incl;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint total = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

#endif // KCACHE_COMMON_H
