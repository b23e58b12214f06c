// jacobi2d.cl: one Jacobi sweep of the 5-point Laplace stencil on a w x h
// grid with fixed (Dirichlet) boundary values. Each TILE x TILE work-group
// stages its block plus a one-cell halo in __local memory, so every input
// value is read from global memory about once instead of five times.
#ifndef TILE
#define TILE 8
#endif
#define HALO_W (TILE + 2)

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void jacobi5(__global const float* restrict in, __global float* restrict out, const int w, const int h)
{
    __local float t[HALO_W][HALO_W];
    const int lx = get_local_id(0);
    const int ly = get_local_id(1);
    const int ox = get_group_id(0) * TILE - 1; // global coordinates of t[0][0]
    const int oy = get_group_id(1) * TILE - 1;

    // Cooperative load of the (TILE+2)^2 halo tile; out-of-grid cells are clamped and never used.
    for (int i = ly * TILE + lx; i < HALO_W * HALO_W; i += TILE * TILE) {
        const int tx = i % HALO_W;
        const int ty = i / HALO_W;
        t[ty][tx] = in[clamp(oy + ty, 0, h - 1) * w + clamp(ox + tx, 0, w - 1)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= w || y >= h)
        return;
    float v = t[ly + 1][lx + 1];
    if (x > 0 && y > 0 && x < w - 1 && y < h - 1)
        v = 0.25f * ((t[ly][lx + 1] + t[ly + 2][lx + 1]) + (t[ly + 1][lx] + t[ly + 1][lx + 2]));
    out[y * w + x] = v;
}
