// fft_stockham.cl: one radix-2 pass of a Stockham auto-sort FFT over a batch
// of FFT_N-point complex signals (float2 = re, im). The host runs log2(FFT_N)
// passes with ns = 1, 2, 4, ..., FFT_N/2, ping-ponging two buffers. Stockham
// reorders as it goes, so the result is in natural order with no
// bit-reversal pass. Forward transform: X[k] = sum_n x[n] exp(-2*pi*i*k*n/N).
#ifndef FFT_N
#error "FFT_N (a power of two) must be defined"
#endif

// cmul multiplies two complex numbers.
static inline float2 cmul(float2 a, float2 b)
{
    return (float2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__kernel void fft_radix2_pass(__global const float2* restrict in, __global float2* restrict out,
                              const int ns)
{
    const int j = get_global_id(0);                  // butterfly in [0, FFT_N/2)
    const size_t base = (size_t)get_global_id(1) * FFT_N; // signal of the batch
    const int k = j & (ns - 1);                      // position inside the current sub-transform

    float c;
    const float s = sincos(-M_PI_F * (float)k / (float)ns, &c); // twiddle exp(-2*pi*i*k/(2*ns))
    const float2 a = in[base + j];
    const float2 b = cmul(in[base + j + FFT_N / 2], (float2)(c, s));

    const int d = ((j - k) << 1) + k; // (j / ns) * 2*ns + k
    out[base + d] = a + b;
    out[base + d + ns] = a - b;
}
