// Jacobi 5-point stencil offloaded with OpenMP: bandwidth-bound.
#include <cstdlib>

void jacobi(const double *in, double *out, int nx, int ny)
{
#pragma omp target teams distribute parallel for collapse(2) map(to: in[0:nx*ny]) map(from: out[0:nx*ny])
    for (int y = 1; y < ny - 1; y++)
        for (int x = 1; x < nx - 1; x++)
            out[y * nx + x] = 0.25 * (in[y * nx + x - 1] + in[y * nx + x + 1] +
                                      in[(y - 1) * nx + x] + in[(y + 1) * nx + x]);
}

int main()
{
    int nx = 4096, ny = 4096;
    double *a = (double *)malloc(sizeof(double) * nx * ny);
    double *b = (double *)malloc(sizeof(double) * nx * ny);
    for (int it = 0; it < 10; it++) jacobi(a, b, nx, ny);
    free(a);
    free(b);
    return 0;
}
