// black_scholes.cl: European call and put prices under Black-Scholes, four
// options per work-item with float4 arithmetic. The normal CDF uses the
// Abramowitz & Stegun 26.2.17 polynomial (absolute error < 7.5e-8), the
// usual choice on GPUs where erfc is slower.

// cnd4 is the standard normal cumulative distribution function.
static inline float4 cnd4(float4 d)
{
    const float a1 = 0.319381530f;
    const float a2 = -0.356563782f;
    const float a3 = 1.781477937f;
    const float a4 = -1.821255978f;
    const float a5 = 1.330274429f;
    const float inv_sqrt_2pi = 0.39894228040143267794f;
    const float4 k = 1.0f / (1.0f + 0.2316419f * fabs(d));
    const float4 poly = k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5))));
    const float4 tail = inv_sqrt_2pi * exp(-0.5f * d * d) * poly; // = 1 - N(|d|)
    return select(tail, 1.0f - tail, d > 0.0f);
}

__kernel void black_scholes(__global const float4* restrict spot, __global const float4* restrict strike,
                            __global const float4* restrict years, __global float4* restrict call,
                            __global float4* restrict put, const int n4, const float r, const float sigma)
{
    const int i = get_global_id(0);
    if (i >= n4)
        return;
    const float4 s = spot[i];
    const float4 k = strike[i];
    const float4 t = years[i];
    const float4 sig_sqrt_t = sigma * sqrt(t);
    const float4 d1 = (log(s / k) + (r + 0.5f * sigma * sigma) * t) / sig_sqrt_t;
    const float4 d2 = d1 - sig_sqrt_t;
    const float4 disc = k * exp(-r * t);
    const float4 nd1 = cnd4(d1);
    const float4 nd2 = cnd4(d2);
    call[i] = s * nd1 - disc * nd2;
    put[i] = disc * (1.0f - nd2) - s * (1.0f - nd1);
}
