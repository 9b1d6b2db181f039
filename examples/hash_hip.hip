// Integer hashing with HIP: integer-op bound.
#include <hip/hip_runtime.h>

__device__ unsigned mix(unsigned h)
{
    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
    return h;
}

__global__ void hash_rounds(unsigned *keys, int n, int rounds)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned h = keys[i];
    for (int r = 0; r < rounds; r++) h = mix(h + r);
    keys[i] = h;
}

int main()
{
    unsigned *k;
    int n = 1 << 22;
    hipMalloc(&k, n * sizeof(unsigned));
    hipLaunchKernelGGL(hash_rounds, dim3(n / 256), dim3(256), 0, 0, k, n, 64);
    return 0;
}
