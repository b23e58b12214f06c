// sobel.cl: Sobel gradient magnitude of an RGBA8 image. Each TILE x TILE
// work-group converts its block plus a one-pixel halo to luma once, in
// __local memory, then applies the 3x3 Sobel operators from there. Borders
// are clamped to the edge.
#include "common.h"

#ifndef TILE
#define TILE 8
#endif
#define HALO_W (TILE + 2)

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void sobel_rgba(__global const uchar4* restrict src, __global float* restrict mag, const int w,
                const int h)
{
    __local float t[HALO_W][HALO_W];
    const int lx = get_local_id(0);
    const int ly = get_local_id(1);
    const int ox = get_group_id(0) * TILE - 1;
    const int oy = get_group_id(1) * TILE - 1;
    for (int i = ly * TILE + lx; i < HALO_W * HALO_W; i += TILE * TILE) {
        const int tx = i % HALO_W;
        const int ty = i / HALO_W;
        t[ty][tx] = luma_rgba8(src[IDX2(clamp(oy + ty, 0, h - 1), clamp(ox + tx, 0, w - 1), w)]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= w || y >= h)
        return;
    const int cx = lx + 1;
    const int cy = ly + 1;
    const float gx = (t[cy - 1][cx + 1] + 2.0f * t[cy][cx + 1] + t[cy + 1][cx + 1]) -
                     (t[cy - 1][cx - 1] + 2.0f * t[cy][cx - 1] + t[cy + 1][cx - 1]);
    const float gy = (t[cy + 1][cx - 1] + 2.0f * t[cy + 1][cx] + t[cy + 1][cx + 1]) -
                     (t[cy - 1][cx - 1] + 2.0f * t[cy - 1][cx] + t[cy - 1][cx + 1]);
    mag[IDX2(y, x, w)] = sqrt(gx * gx + gy * gy);
}
