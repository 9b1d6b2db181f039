// Evaluates a degree-64 polynomial in double precision per element: 128 fp64 FLOP per
// 16 bytes. Compute-bound on GPUs with a low fp64 rate (GeForce), bandwidth-bound on H100.
__global__ void horner(const double *x, double *y, const double *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i], acc = 0.0;
    for (int k = 0; k < 64; k++) acc = acc * v + c[k];
    y[i] = acc;
}
