// Evaluates a degree-64 polynomial in double precision per element: 128 fp64 FLOP per
// 16 bytes of DRAM traffic (x read, y written), AI 8. Compute-bound on GPUs with a low fp64
// rate (GeForce), bandwidth-bound on H100 (fp64 ridge 9.99 SXM5, 12.8 PCIe) at this size,
// where y (512 MB) cannot stay in L2.
__global__ void horner(const double *x, double *y, const double *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i], acc = 0.0;
    for (int k = 0; k < 64; k++) acc = acc * v + c[k];
    y[i] = acc;
}

void run(const double *x, double *y, const double *c)
{
    const int n = 1 << 26;
    horner<<<(n + 255) / 256, 256>>>(x, y, c, n);
}
