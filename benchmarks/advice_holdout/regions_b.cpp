// Held-out offload regions, written after the rules were final (see advice_precision.py).
float dot(int n, const float *a, const float *b)
{
    float sum = 0.0f;
    #pragma omp target teams distribute parallel for reduction(+: sum) map(to: a[0:n], b[0:n]) map(tofrom: sum)
    for (int i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}

void axpy_acc(int n, float s, float *a, float *b)
{
    #pragma acc parallel loop copy(a[0:n]) copy(b[0:n])  // expect RL011
    for (int i = 0; i < n; i++) a[i] = a[i] + s * b[i];
}

void matmul_omp(int n, const float *A, const float *B, float *C)
{
    #pragma omp target teams distribute parallel for collapse(2) map(to: A[0:n*n], B[0:n*n]) map(from: C[0:n*n])
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            float s = 0.0f;
            for (int k = 0; k < n; k++) s += A[i * n + k] * B[k * n + j];
            C[i * n + j] = s;
        }
}

void column_sums(int n, const float *A, float *out)
{
    #pragma omp target teams distribute parallel for map(to: A[0:n*n]) map(from: out[0:n])
    for (int j = 0; j < n; j++) {
        float s = 0.0f;
        for (int i = 0; i < n; i++) s += A[i * n + j];
        out[j] = s;
    }
}

void row_sums(int n, const float *A, float *out)
{
    #pragma omp target teams distribute parallel for map(to: A[0:n*n]) map(from: out[0:n])
    for (int i = 0; i < n; i++) {
        float s = 0.0f;
        for (int j = 0; j < n; j++) s += A[i * n + j];  // expect RL008
        out[i] = s;
    }
}
