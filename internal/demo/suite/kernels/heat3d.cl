// heat3d.cl: one explicit step of the 3-D heat equation with the 7-point
// Laplacian, u' = u + alpha*(sum of 6 neighbours - 6u), zero-flux boundary.
// Each work-item owns one (x, y) column and marches along z keeping the
// below/centre/above values in registers (2.5-D blocking), so each value is
// loaded once per column instead of three times.
__kernel void heat7(__global const float* restrict u, __global float* restrict out,
                    const int nx, const int ny, const int nz, const float alpha)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= nx || y >= ny)
        return;
    const size_t plane = (size_t)nx * ny;
    size_t i = (size_t)y * nx + x;
    float below = u[i];
    float centre = below;
    for (int z = 0; z < nz; ++z, i += plane) {
        // Zero flux: a neighbour outside the grid takes the centre value.
        const float above = z + 1 < nz ? u[i + plane] : centre;
        const float xm = x > 0 ? u[i - 1] : centre;
        const float xp = x + 1 < nx ? u[i + 1] : centre;
        const float ym = y > 0 ? u[i - nx] : centre;
        const float yp = y + 1 < ny ? u[i + nx] : centre;
        out[i] = centre + alpha * (((xm + xp) + (ym + yp)) + (below + above) - 6.0f * centre);
        below = centre;
        centre = above;
    }
}
