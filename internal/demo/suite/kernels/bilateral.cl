// bilateral.cl: edge-preserving bilateral filter on a grey float image.
// Each neighbour within RADIUS is weighted by a spatial Gaussian and by a
// Gaussian of its difference from the centre value, so strong edges are
// not blurred. Borders are clamped to the edge. The Gaussians' 1/(2 sigma^2)
// factors come in as arguments so that one binary serves many settings.
#include "common.h"

#ifndef RADIUS
#define RADIUS 3
#endif

__kernel void bilateral(__global const float* restrict src, __global float* restrict dst, const int w,
                        const int h, const float inv2ss, const float inv2sr)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= w || y >= h)
        return;
    const float c = src[IDX2(y, x, w)];
    float sum = 0.0f;
    float norm = 0.0f;
    for (int dy = -RADIUS; dy <= RADIUS; ++dy) {
        for (int dx = -RADIUS; dx <= RADIUS; ++dx) {
            const float v = load_clamped(src, x + dx, y + dy, w, h);
            const float d = v - c;
            const float wgt = exp(-(float)(dx * dx + dy * dy) * inv2ss - d * d * inv2sr);
            sum = fma(wgt, v, sum);
            norm += wgt;
        }
    }
    dst[IDX2(y, x, w)] = sum / norm;
}
