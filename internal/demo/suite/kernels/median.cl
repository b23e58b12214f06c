// median.cl: 3x3 median filter on an RGBA8 image, each channel filtered
// independently (clamp-to-edge borders). Component-wise uchar4 min/max make
// one compare-exchange network serve all four channels at once; a partial
// selection sort (five passes) leaves the median in v[4].
__kernel void median3x3_rgba(__global const uchar4* restrict src, __global uchar4* restrict dst,
                             const int w, const int h)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= w || y >= h)
        return;
    uchar4 v[9];
    int n = 0;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            v[n++] = src[clamp(y + dy, 0, h - 1) * w + clamp(x + dx, 0, w - 1)];
#pragma unroll
    for (int i = 0; i < 5; ++i) {
#pragma unroll
        for (int j = i + 1; j < 9; ++j) {
            const uchar4 lo = min(v[i], v[j]);
            v[j] = max(v[i], v[j]);
            v[i] = lo;
        }
    }
    dst[y * w + x] = v[4];
}
