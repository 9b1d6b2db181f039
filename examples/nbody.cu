// All-pairs n-body force step: each body reads every other body through shared memory,
// ~20 fp32 FLOP per interaction: compute-bound.
#include <cuda_runtime.h>
#define TILE 256

__device__ float3 interact(float4 bi, float4 bj, float3 acc)
{
    float3 r = make_float3(bj.x - bi.x, bj.y - bi.y, bj.z - bi.z);
    float d2 = r.x * r.x + r.y * r.y + r.z * r.z + 1e-9f;
    float inv = rsqrtf(d2);
    float s = bj.w * inv * inv * inv;
    acc.x += r.x * s;
    acc.y += r.y * s;
    acc.z += r.z * s;
    return acc;
}

__global__ void __launch_bounds__(TILE) forces(const float4 *__restrict__ pos, float3 *acc, int n)
{
    __shared__ float4 tile[TILE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 me = pos[i];
    float3 a = make_float3(0.f, 0.f, 0.f);
    for (int t = 0; t < n / TILE; t++) {
        tile[threadIdx.x] = pos[t * TILE + threadIdx.x];
        __syncthreads();
#pragma unroll 8
        for (int j = 0; j < TILE; j++) a = interact(me, tile[j], a);
        __syncthreads();
    }
    acc[i] = a;
}

int main()
{
    int n = 1 << 16;
    float4 *pos; float3 *acc;
    cudaMalloc(&pos, n * sizeof(float4));
    cudaMalloc(&acc, n * sizeof(float3));
    forces<<<n / TILE, TILE>>>(pos, acc, n);
    return 0;
}
