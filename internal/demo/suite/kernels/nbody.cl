// nbody.cl: one leapfrog-style step of an all-pairs gravitational n-body
// system. pos.w is the mass. Each work-group streams the bodies through a
// WG-sized __local tile, so a position is read from global memory once per
// group rather than once per item. SOFTENING^2 (eps2) keeps close
// encounters finite and makes self-interaction vanish (d = 0). Padding
// bodies beyond n have zero mass and contribute nothing.
#ifndef WG
#define WG 64
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void nbody_step(__global const float4* restrict pos, __global const float4* restrict vel,
                __global float4* restrict new_pos, __global float4* restrict new_vel, const int n,
                const float dt, const float eps2)
{
    __local float4 tile[WG];
    const int i = get_global_id(0);
    const int lid = get_local_id(0);
    const float4 p = i < n ? pos[i] : (float4)(0.0f);
    float3 acc = (float3)(0.0f);

    for (int base = 0; base < n; base += WG) {
        const int j = base + lid;
        tile[lid] = j < n ? pos[j] : (float4)(0.0f);
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll 8
        for (int k = 0; k < WG; ++k) {
            const float4 q = tile[k];
            const float3 d = q.xyz - p.xyz;
            const float inv_r = rsqrt(dot(d, d) + eps2);
            acc += (q.w * inv_r * inv_r * inv_r) * d;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i < n) {
        float4 v = vel[i];
        v.xyz += acc * dt;
        new_vel[i] = v;
        new_pos[i] = (float4)(p.xyz + v.xyz * dt, p.w);
    }
}
