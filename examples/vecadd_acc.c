/* OpenACC vector add: bandwidth-bound. */
void vecadd(int n, const float *restrict a, const float *restrict b, float *restrict c)
{
#pragma acc parallel loop copyin(a[0:n], b[0:n]) copyout(c[0:n])
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}
