// gpu: rtx3080
// Held-out kernels, written after the rules were final (see benchmarks/advice_precision.py).
__global__ void stencil2d(int nx, int ny, const float *__restrict__ in, float *__restrict__ out)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1) return;
    out[y * nx + x] = 0.25f * (in[y * nx + x - 1] + in[y * nx + x + 1] + in[(y - 1) * nx + x] + in[(y + 1) * nx + x]);
}

__global__ void transpose_naive(int nx, int ny, const float *__restrict__ in, float *__restrict__ out)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < nx && y < ny) out[x * ny + y] = in[y * nx + x];  // expect RL008
}

__global__ void row_max(int rows, int n, const float *__restrict__ x, float *__restrict__ m)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float best = -1e30f;
    for (int j = 0; j < n; j++) best = fmaxf(best, x[row * n + j]);  // expect RL008
    m[row] = best;
}

__global__ void block_sum(int n, const float *__restrict__ in, float *__restrict__ out)
{
    __shared__ float s[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

__global__ void shared_hist(int n, const unsigned char *__restrict__ data, unsigned int *__restrict__ hist)
{
    __shared__ unsigned int sh[256];
    sh[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&sh[data[i]], 1u);
    __syncthreads();
    atomicAdd(&hist[threadIdx.x], sh[threadIdx.x]);
}

__global__ void warp_total(int n, const float *__restrict__ in, float *__restrict__ out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x % warpSize) == 0) atomicAdd(out, v);
}

__global__ void third(int n, const float *__restrict__ x, float *__restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * 0.3333;  // expect RL001
}

__global__ void decay(int n, float alpha, const float *__restrict__ v, float *__restrict__ out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = v[i];
    float acc = 0.0f;
    for (int k = 0; k < 2048; k++) acc += expf(-alpha * k * x);  // expect RL004
    out[i] = acc;
}
