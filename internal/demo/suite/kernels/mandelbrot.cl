// mandelbrot.cl: escape-time iteration counts of the Mandelbrot set on a
// w x h pixel grid starting at (x0, y0) with steps (dx, dy). Contraction
// into FMA is disabled so that every operation is a correctly rounded
// single-precision operation: escape counts are discontinuous in rounding,
// and this makes them bit-reproducible against a scalar reference.
#pragma OPENCL FP_CONTRACT OFF

#ifndef MAX_ITER
#define MAX_ITER 256
#endif

__kernel void mandelbrot(__global uint* restrict iters, const int w, const int h, const float x0,
                         const float y0, const float dx, const float dy)
{
    const int px = get_global_id(0);
    const int py = get_global_id(1);
    if (px >= w || py >= h)
        return;
    const float cx = x0 + (float)px * dx;
    const float cy = y0 + (float)py * dy;
    float zx = 0.0f;
    float zy = 0.0f;
    uint n = 0;
    while (n < MAX_ITER) {
        const float zx2 = zx * zx;
        const float zy2 = zy * zy;
        if (zx2 + zy2 > 4.0f)
            break;
        zy = (2.0f * zx) * zy + cy;
        zx = (zx2 - zy2) + cx;
        ++n;
    }
    iters[py * w + px] = n;
}
