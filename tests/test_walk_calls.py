"""Counting rules of ``walk_calls.py`` (device functions and macros followed) on small
sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import LAUNCH, buffer_of, count, detected

from roofline_lsp.estimate import costs
from roofline_lsp.estimate.roofline import Inputs, analyze


def test_macros_and_device_functions_followed(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a = count(
        gpu,
        tmp_path,
        "#define SQR(v) ((v) * (v))\n"
        "#define IDX (blockIdx.x * blockDim.x + threadIdx.x)\n"
        "__device__ float norm2(const float *p, int i) { return SQR(p[i]) + SQR(p[i + 1]); }\n"
        "__global__ void k(float *x, float *y) {\n"
        "  y[IDX] = norm2(x, 2 * IDX);\n"
        "}\n",
        **LAUNCH,
    )
    # two squares and an add: 3 FP32
    assert a.counts.flops["fp32"] == pytest.approx(3.0)
    assert set(a.counts.followed) >= {"norm2", "SQR", "IDX"}
    # the callee's accesses are bound to the caller's buffer x
    assert {x.buffer for x in a.counts.accesses} == {"x", "y"}


def test_an_operator_the_program_defines_runs_its_body(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # nvcc -arch=sm_86 -ptx, FP32 FLOP per thread (an fma counts 2):
    #   c[i] = 2.f * (a[i] + b[i])   operator+ (3 add.f32), operator*(float, V3) (3 mul.f32): 6
    #   acc += a[i]                  operator+= (3 add.f32):                                  3
    #   f[i] = q[i] * s              operator*(float4, float), not (float4, float4): 4 mul:  4
    # Before: a V3 sum was no arithmetic at all (0 FLOP), a product one FLOP.
    a = count(
        gpu,
        tmp_path,
        "struct V3 { float x, y, z; };\n"
        "__device__ V3 operator+(const V3 &a, const V3 &b) {\n"
        "  return {a.x + b.x, a.y + b.y, a.z + b.z}; }\n"
        "__device__ V3 operator*(float s, V3 a) { return {s * a.x, s * a.y, s * a.z}; }\n"
        "__device__ void operator+=(V3 &a, const V3 &b) { a.x += b.x; a.y += b.y; a.z += b.z; }\n"
        "__device__ float4 operator*(float4 a, float4 b) {\n"
        "  return make_float4(a.x * b.x * b.x, a.y * b.y * b.y, a.z * b.z * b.z, a.w * b.w); }\n"
        "__device__ float4 operator*(float4 a, float s) {\n"
        "  return make_float4(a.x * s, a.y * s, a.z * s, a.w * s); }\n"
        "__global__ void k(const V3 *a, const V3 *b, V3 *c, V3 *d, const float4 *q, float4 *f,\n"
        "                  float s) {\n"
        "  int i = threadIdx.x;\n"
        "  c[i] = 2.f * (a[i] + b[i]);\n"
        "  V3 acc = d[i];\n"
        "  acc += a[i];\n"
        "  d[i] = acc;\n"
        "  f[i] = q[i] * s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(6 + 3 + 4)


def test_complex_arithmetic_counts_as_the_compiler_does_it(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # nvcc -arch=sm_86 -ptx of cuComplex.h and thrust::complex (FLOP, an fma counts 2):
    #   cuCmulf(x, y)       2 mul.f32 + 2 fma.rn.f32               6 FP32
    #   cuCaddf(x, y)       2 add.f32                              2 FP32
    #   cuCabsf(x)          the scaled hypotenuse                 20 FP32
    #   cuCrealf(x) * 2.f   one mul.f32 of the real part           1 FP32
    #   z[i] * w[i]         std::complex<double> product:          6 FP64 (not 2: lane by lane)
    #   z[i] * s            by a real double: 2 mul.f64            2 FP64
    # Before: the cuComplex calls were unknown functions (0 FLOP), the product 2 FLOP.
    a = count(
        gpu,
        tmp_path,
        "#include <cuComplex.h>\n"
        "#include <complex>\n"
        "__global__ void k(const cuFloatComplex *x, cuFloatComplex *y, float *r,\n"
        "                  const std::complex<double> *z, std::complex<double> *w, double s) {\n"
        "  int i = threadIdx.x;\n"
        "  y[i] = cuCaddf(cuCmulf(x[i], y[i]), x[i]);\n"
        "  r[i] = cuCabsf(x[i]) + cuCrealf(x[i]) * 2.f;\n"
        "  w[i] = z[i] * w[i];\n"
        "  w[i + 1] = z[i] * s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(6 + 2 + 20 + 1 + 1)
    assert a.counts.flops["fp64"] == pytest.approx(6 + 2)


def test_pow_of_a_float_and_an_integer_is_double(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # C++ makes pow(float, int) pow(double, double) (an integer argument promotes): nvcc
    # compiles b[i] = pow(a[i], 2) in FP64 (PTX: 127 FP64 FLOP, no FP32); pow(a[i], 2.5f) is
    # the float overload (62 FP32). The estimate books the first as fp64, the second as fp32.
    a = count(
        gpu,
        tmp_path,
        "#include <math.h>\n"
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = threadIdx.x;\n"
        "  b[i] = pow(a[i], 2);\n"
        "  b[i + 1] = pow(a[i], 2.5f);\n"
        "}\n",
        **LAUNCH,
    )
    fp64_side = costs.F64_FP32_SIDE.get("pow", 0.0)  # FP32 work inside the fp64 sequence
    assert a.counts.flops["fp64"] == pytest.approx(costs.MATH_F64["pow"][0])
    assert a.counts.flops["fp32"] == pytest.approx(costs.MATH_F32["pow"][0] + fp64_side)


def test_a_macro_casting_a_local_keeps_the_cast(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # H2F(ir) is static_cast<float>(ir) of a half: the sum of two is one FP32 add, and the
    # template sigmoid of it runs in float: exp (costs.MATH_F32), 1 + e (1 add), 1 / (..)
    # (an IEEE division). nvcc: no FP64 (before: H2F(ir) was a comparison, a bool, and the
    # sigmoid of it an FP64 exp of an integer).
    a = count(
        gpu,
        tmp_path,
        "#include <cuda_fp16.h>\n"
        "#define H2F(input) static_cast<float>(input)\n"
        "template <typename T>\n"
        "__device__ T sigmoid(T in) {\n"
        "  T one = static_cast<T>(1.0);\n"
        "  return one / (one + exp(-in));\n"
        "}\n"
        "__global__ void k(const half *a, float *b) {\n"
        "  int i = threadIdx.x;\n"
        "  half ir = a[i];\n"
        "  half hr = a[i + 1];\n"
        "  b[i] = sigmoid(H2F(ir) + H2F(hr));\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp64"] == 0
    assert a.counts.flops["fp32"] == pytest.approx(
        1 + costs.MATH_F32["exp"][0] + 1 + costs.MATH_F32["div"][0]
    )


def test_a_global_atomic_add_is_no_flop(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # nvcc -arch=sm_86 -ptx: atomicAdd(&g[k], v) on global memory is one red.global.add.f32
    # (.f64), run in L2: Nsight Compute counts no FLOP for it (a dev kernel that adds two
    # floats and then atomicAdds the sum measures 2 FP32 FLOP per element, not 3). On shared
    # memory (atom.shared.add.f32) the SMs run a compare-and-swap loop around an FADD (a dev
    # kernel whose only float op is one measures ~90 FP32 FLOP per thread): 1 FLOP at least.
    #   x[i] * 2.f        1 FP32
    #   atomicAdd(&g[..]) 0
    #   atomicAdd(&d[..]) 0 (the (double) conversion is no FLOP either)
    #   atomicAdd(&s[..]) 1 FP32 (shared)
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *x, float *g, double *d) {\n"
        "  __shared__ float s[32];\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  atomicAdd(&g[i % 64], x[i] * 2.f);\n"
        "  atomicAdd(d + i % 64, (double)x[i]);\n"
        "  atomicAdd(&s[threadIdx.x % 32], x[i]);\n"
        "  __syncthreads();\n"
        "  g[i] = s[threadIdx.x % 32];\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(1 + 1)
    assert a.counts.flops["fp64"] == 0


def test_an_atomic_hands_each_thread_a_slot_of_its_own(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # stream compaction: pos = atomicAdd(counter, 1) is a different value for each of the
    # 262,144 threads, so out[pos] writes 262,144 floats (1 MiB), as many as in[i] reads;
    # the value an atomic returns was taken for the counter's, one for all threads (4 B)
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *in, float *out, int *counter) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  int pos = atomicAdd(counter, 1);\n"
        "  out[pos] = in[i];\n"
        "}\n",
        **LAUNCH,
    )
    out = buffer_of(a, "out")
    assert out.footprint == 262144 * 4


def test_half_to_float_intrinsics_give_floats(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # __low2float/__high2float of a half2 are floats: their sum is one add.f32 (nvcc -ptx),
    # not a half2 add (it counted 2 FP16 before)
    a = count(
        gpu,
        tmp_path,
        "#include <cuda_fp16.h>\n"
        "__global__ void k(const half2 *h, float *r) {\n"
        "  int i = threadIdx.x;\n"
        "  r[i] = __low2float(h[i]) + __high2float(h[i]);\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(1.0)
    assert a.counts.flops["fp16"] == 0


def test_a_variadic_macro_passes_its_arguments(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # SUM3(...) is sum3(__VA_ARGS__): two adds per call, 64 calls and the running sum:
    # 64 x 3 = 192 FP32 FLOP (nvcc -ptx: 192). Before, __VA_ARGS__ was not replaced and the
    # call counted one add of the loop (66).
    a = count(
        gpu,
        tmp_path,
        "#define SUM3(...) sum3(__VA_ARGS__)\n"
        "__device__ float sum3(float a, float b, float c) { return a + b + c; }\n"
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  for (int k = 0; k < 64; k++) s += SUM3(a[i], a[k], 1.f);\n"
        "  b[i] = s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(192)


def test_a_template_length_deduced_from_the_array_a_call_passes(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # load_blocked(t, a, vals) with ``float vals[8]`` deduces N = 8 from ``T (&items)[N]``
    # (CUB's BlockLoad style), as does the store through the class's method that forwards
    # its own ``items``: 8 trips each (not the 16-trip default), 8 FP32 multiplies, 8 loads
    # and 8 stores of 4 B per thread.
    a = count(
        gpu,
        tmp_path,
        "template <typename T, int N>\n"
        "__device__ void load_blocked(int tid, const T *src, T (&items)[N]) {\n"
        "  for (int i = 0; i < N; i++) items[i] = src[tid * N + i];\n"
        "}\n"
        "template <typename T, int N>\n"
        "__device__ void store_blocked(int tid, T *dst, T (&items)[N]) {\n"
        "  for (int i = 0; i < N; i++) dst[tid * N + i] = items[i] * 2.0f;\n"
        "}\n"
        "template <typename T, int ITEMS> struct Store {\n"
        "  __device__ void run(int tid, T *dst, T (&items)[ITEMS]) {\n"
        "    store_blocked(tid, dst, items);\n"
        "  }\n"
        "};\n"
        "__global__ void k(const float *a, float *b) {\n"
        "  float vals[8];\n"
        "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  load_blocked(t, a, vals);\n"
        "  Store<float, 8>().run(t, b, vals);\n"
        "}\n",
        **LAUNCH,
    )
    assert {(lp.trips, lp.source) for lp in a.counts.loops} == {(8, "argument")}
    assert a.counts.flops["fp32"] == pytest.approx(8.0)
    glob = [x for x in a.counts.accesses if x.space == "global"]
    assert sum(x.weight * x.elem for x in glob if x.kind == "load") == pytest.approx(32.0)
    assert sum(x.weight * x.elem for x in glob if x.kind == "store") == pytest.approx(32.0)


def test_a_class_template_length_deduced_from_the_array_its_method_takes(
    gpu, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # CUB's WarpExchange shape: ITEMS is the class template's parameter, named only through
    # a typedef; BlockedToStriped(T (&in)[ITEMS], ...) called with ``float v[4]`` deduces
    # ITEMS = 4: both item loops run 4 trips (not the 16-trip default), one FP32 multiply
    # each in the second: 4 FLOP per thread.
    a = count(
        gpu,
        tmp_path,
        "template <typename T, int ITEMS, int WARP> struct Exchange {\n"
        "  T *tmp;\n"
        "  __device__ Exchange(T *t) : tmp(t) {}\n"
        "  __device__ void BlockedToStriped(T (&in)[ITEMS], T (&out)[ITEMS]) {\n"
        "    int lane = threadIdx.x % WARP;\n"
        "    for (int item = 0; item < ITEMS; item++) tmp[ITEMS * lane + item] = in[item];\n"
        "    for (int item = 0; item < ITEMS; item++) out[item] = tmp[item * WARP + lane] * 2.f;\n"
        "  }\n"
        "};\n"
        "__global__ void k(float *b) {\n"
        "  __shared__ float s[32 * 4];\n"
        "  float v[4];\n"
        "  typedef Exchange<float, 4, 32> ExchangeT;\n"
        "  ExchangeT(s).BlockedToStriped(v, v);\n"
        "  b[blockIdx.x * blockDim.x + threadIdx.x] = v[0];\n"
        "}\n",
        **LAUNCH,
    )
    assert {(lp.trips, lp.source) for lp in a.counts.loops} == {(4, "argument")}
    assert a.counts.flops["fp32"] == pytest.approx(4.0)


def test_a_24_bit_multiply_is_a_product(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # i = threadIdx.x + __mul24(blockIdx.x, 256) spans 0 .. 256 * 1024 - 1 like the plain
    # product: the boundary test is true for 2 of the 262,144 threads, so the interior's one
    # FP32 add runs 1 - 2 / 262,144 times per thread (the index lost: about 1 / 4)
    src = (
        "__global__ void k(float *x, int nx) {\n"
        "  int i = threadIdx.x + __mul24(blockIdx.x, blockDim.x);\n"
        "  if (i == 0 || i == nx - 1) x[i] = 0.f;\n"
        "  else x[i] = x[i - 1] + x[i + 1];\n"
        "}\n"
    )
    n = (("nx", 256.0 * 1024),)
    a = count(gpu, tmp_path, src, values=n, **LAUNCH)
    plain = src.replace("__mul24(blockIdx.x, blockDim.x)", "blockIdx.x * blockDim.x")
    b = count(gpu, tmp_path, plain, "p.cu", values=n, **LAUNCH)
    assert a.counts.flops["fp32"] == pytest.approx(1 - 2 / (256 * 1024))
    assert a.counts.flops["fp32"] == pytest.approx(b.counts.flops["fp32"])


def test_a_cast_read_as_a_call_keeps_its_value(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # ``(real)(t)`` with ``real`` a typedef reads in the grammar as a call of ``(real)``: it
    # is the conversion, so the branch on h = t / 2 is weighed as with ``(real)t``, not as a
    # value read from memory (a coin flip); ``UINT64_C(128)`` is 128: t < 128 holds for 128
    # of the 256 threads
    src = (
        "typedef double real;\n"
        "__global__ void k(float *x) {\n"
        "  int t = threadIdx.x;\n"
        "  real h = (real)(t) * 0.5;\n"
        "  if (h < 32.0) x[t] += 1.0f;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    b = count(gpu, tmp_path, src.replace("(real)(t)", "(real)t"), "b.cu", **LAUNCH)
    assert a.counts.flops == b.counts.flops
    assert a.counts.flops["fp64"] == 1.0  # the multiply, in double
    assert a.counts.flops["fp32"] != pytest.approx(0.5)
    c = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x) {\n"
        "  int t = threadIdx.x;\n"
        "  if (t < UINT64_C(128)) x[t] += 1.0f;\n"
        "}\n",
        "c.cu",
        **LAUNCH,
    )
    assert c.counts.flops["fp32"] == pytest.approx(128 / 256)


def test_accessors_and_views_read_and_write_their_objects_arrays(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # n = 1 M elements each. An accessor returning a reference (``domain.x(i)``, its
    # member m_x) and a view's ``operator()`` (``a(i, j)`` over a View<double>'s data) are
    # the arrays they name: f = x * y + 2 reads x and y and writes f (3 x 8 MB of doubles),
    # b = 2 a + 1 reads a and writes b (2 x 8 MB). Before, the calls named no memory and
    # the kernels moved nothing (compute-bound on a stream)
    src = (
        "template <typename T> struct View {\n"
        "  T *data; int ny;\n"
        "  T& operator()(int i, int j) { return data[i * ny + j]; }\n"
        "};\n"
        "class Domain {\n"
        " public:\n"
        "  double *m_x, *m_y, *m_f;\n"
        "  double& x(int i) { return m_x[i]; }\n"
        "  double& y(int i) { return m_y[i]; }\n"
        "  double& f(int i) { return m_f[i]; }\n"
        "};\n"
        "void calc(Domain &domain, int n) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < n; ++i) domain.f(i) = domain.x(i) * domain.y(i) + 2.0;\n"
        "}\n"
        "void op(View<double> a, View<double> b, int nx, int ny) {\n"
        "  #pragma omp target teams distribute parallel for collapse(2)\n"
        "  for (int i = 0; i < nx; i++)\n"
        "    for (int j = 0; j < ny; j++) b(i, j) = 2.0 * a(i, j) + 1.0;\n"
        "}\n"
        "int main() {\n"
        "  Domain d; View<double> a, b;\n"
        "  calc(d, 1 << 20);\n"
        "  op(a, b, 1024, 1024);\n"
        "}\n"
    )
    det = detected(tmp_path, src, "views.cpp")
    mb = 8 * (1 << 20)
    calc, op = (analyze(k, det, gpu, Inputs()) for k in det.kernels)
    assert calc.counts.flops["fp64"] == pytest.approx(2.0)  # an FMA per element
    assert calc.memory.bytes_loaded == pytest.approx(2 * mb, rel=0.01)
    assert calc.memory.bytes_stored == pytest.approx(mb, rel=0.01)
    assert {b.buffer: (b.loaded, b.stored) for b in op.memory.buffers} == {
        "a.data": (pytest.approx(mb), 0.0),
        "b.data": (0.0, pytest.approx(mb)),
    }


def test_a_view_s_subscript_operator_reads_and_writes_its_array(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # b[i] = 2 * a[i] over two views passed by value, through `operator[]` returning a
    # reference into the view's data: 1 M floats read and 1 M written (4 MiB each), as the
    # bare pointers would. Before, the subscript of a struct named no memory: nothing moved
    src = (
        "template <typename T> struct View {\n"
        "  T *p;\n"
        "  __device__ T &operator[](int i) const { return p[i]; }\n"
        "};\n"
        "__global__ void k(View<const float> a, View<float> b, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) b[i] = 2.f * a[i];\n"
        "}\n"
        "int main() { View<const float> a; View<float> b; k<<<4096, 256>>>(a, b, 1 << 20); }\n"
    )
    a = count(gpu, tmp_path, src)
    mb = 4 * (1 << 20)
    assert {b.buffer: (b.loaded, b.stored) for b in a.memory.buffers} == {
        "a.p": (pytest.approx(mb), 0.0),
        "b.p": (0.0, pytest.approx(mb)),
    }


def test_each_view_s_calls_reach_its_own_array(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # three views, one operator(): c = a + b, c += a * b, c += a - b, c *= a, c *= b over
    # 1 M doubles. Each call reaches its own view's array: a and b read once (8 MB each), c
    # read and written (8 MB each); 1 + 2 + 2 + 1 + 1 FP64 FLOP per element. c is read by
    # the four compound assignments and written by all five: 9 x 8 MB referenced, also
    # once a call's walk is reused (after eight calls of operator(), per object)
    src = (
        "template <typename T> struct View {\n"
        "  T *data; int ny;\n"
        "  T& operator()(int i, int j) { return data[i * ny + j]; }\n"
        "};\n"
        "void op(View<double> a, View<double> b, View<double> c, int nx, int ny) {\n"
        "  #pragma omp target teams distribute parallel for collapse(2)\n"
        "  for (int i = 0; i < nx; i++)\n"
        "    for (int j = 0; j < ny; j++) {\n"
        "      c(i, j) = a(i, j) + b(i, j);\n"
        "      c(i, j) += a(i, j) * b(i, j);\n"
        "      c(i, j) += a(i, j) - b(i, j);\n"
        "      c(i, j) *= a(i, j);\n"
        "      c(i, j) *= b(i, j);\n"
        "    }\n"
        "}\n"
        "int main() { View<double> a, b, c; op(a, b, c, 1024, 1024); }\n"
    )
    a = count(gpu, tmp_path, src, name="views3.cpp")
    mb = 8 * (1 << 20)
    assert a.counts.flops["fp64"] == pytest.approx(7.0)
    assert {b.buffer: (b.loaded, b.stored) for b in a.memory.buffers} == {
        "a.data": (pytest.approx(mb), 0.0),
        "b.data": (pytest.approx(mb), 0.0),
        "c.data": (pytest.approx(mb), pytest.approx(mb)),
    }
    assert {b.buffer: b.references for b in a.memory.buffers}["c.data"] == 9 * mb


def test_a_macro_naming_an_element_stores_into_it(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Fortran-style array macros (`#define lu(c, i) a_lu[(i) + 1024 * (c)]`): the
    # assignment `lu(1, i) = a1 * lu(1, i) + u(1, i)` loads a_lu and a_u and stores a_lu,
    # 4 bytes each per thread: 1024 threads write 4 kB of a_lu (what reaches DRAM of it is
    # the L2 model's). Before, the store through the macro was not counted.
    a = count(
        gpu,
        tmp_path,
        "#define lu(c, i) a_lu[(i) + 1024 * (c)]\n"
        "#define u(c, i) a_u[(i) + 1024 * (c)]\n"
        "__global__ void k(const float *a_u, float *a_lu, float a1) {\n"
        "  int i = threadIdx.x + blockIdx.x * blockDim.x;\n"
        "  lu(1, i) = a1 * lu(1, i) + u(1, i);\n"
        "}\n"
        "int main() { float *a, *b; k<<<4, 256>>>(a, b, 2.0f); }\n",
    )
    kinds = sorted((x.buffer, x.kind) for x in a.counts.accesses)
    assert kinds == [("a_lu", "load"), ("a_lu", "store"), ("a_u", "load")]
    lu = buffer_of(a, "a_lu")
    assert lu.stored == pytest.approx(1024 * 4)


def test_a_method_assigning_members_of_an_array_element_stores_it(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `p[i].set(v)` with `void set(unsigned char v) { b = v; g = v; r = v; a = v; }`: the
    # members it assigns are those of the element p[i], a 4-byte Pix, read for p[i].r and
    # written back: 1024 threads load 4 kB of p and store 4 kB. A const method (`luma`)
    # writes nothing.
    a = count(
        gpu,
        tmp_path,
        "struct Pix {\n"
        "  unsigned char b, g, r, a;\n"
        "  __device__ float luma() const { return 0.5f * r; }\n"
        "  __device__ void set(unsigned char v) { b = v; g = v; r = v; a = v; }\n"
        "};\n"
        "__global__ void k(Pix *p, float *y) {\n"
        "  int i = threadIdx.x + blockIdx.x * blockDim.x;\n"
        "  y[i] = p[i].luma();\n"
        "  p[i].set((unsigned char)(p[i].r * 0.5f));\n"
        "}\n"
        "int main() { Pix *p; float *y; k<<<4, 256>>>(p, y); }\n",
    )
    pix = buffer_of(a, "p")
    assert pix.footprint == pytest.approx(1024 * 4)
    assert [x.kind for x in a.counts.accesses if x.buffer == "p" and x.kind == "store"]
    assert pix.stored == pytest.approx(1024 * 4)


def test_atomics_at_every_scope_are_atomics(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # atomicSystemWide's loop: each of CUDA's atomic functions at system (and block) scope is
    # one update of its address, as at device scope: 5 accesses of `a`, one per element
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(int *a) {\n"
        "  int tid = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  atomicAdd_system(&a[0], 10);\n"
        "  atomicExch_system(&a[1], tid);\n"
        "  atomicMax_block(&a[2], tid);\n"
        "  atomicCAS_system(&a[3], tid - 1, tid);\n"
        "  atomicXor_block(&a[4], tid);\n"
        "}\n",
        **LAUNCH,
    )
    assert sorted((x.index, x.kind) for x in a.counts.accesses) == [
        (str(k), "atomic") for k in range(5)
    ]


def test_a_histogram_s_bins_are_the_range_its_index_is_kept_in(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 2^22 threads each read a 4-byte key and add to a bin: idx & 255, idx % 64 and a clamp
    # min(max(bin, 0), 99) keep the atomics in a few hundred bytes that L2 holds: DRAM is the
    # keys, 16.8 MB, not a scattered 8 bytes per thread more (50.3 MB)
    for index in ("idx[i] & 255", "idx[i] % 64", "min(max(idx[i] / 3, 0), 99)"):
        src = (
            "__global__ void k(const int *idx, unsigned *bins, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"  if (i < n) atomicAdd(&bins[{index}], 1u);\n"
            "}\n"
            "int main() { int n = 1 << 22; int *a; unsigned *b; k<<<n / 256, 256>>>(a, b, n); }\n"
        )
        a = count(gpu, tmp_path, src)
        assert a.memory.kernel_bytes == pytest.approx(4 * 2**22, rel=0.01), index


def test_an_index_helper_keeps_the_lanes_apart(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # x[at(i + 1)] and x[clampi(i + 2, 0, n - 1)]: the helpers return their argument (the
    # clamp bends only the last two of the 2^20 threads), so a warp's 32 loads read 32
    # consecutive floats, lane stride 1, as x[i + 1] does. Before, the value a device
    # function returned had lost the argument's growth across the lanes (stride unknown).
    src = (
        "__device__ int at(int v) { return v; }\n"
        "__device__ int clampi(int v, int lo, int hi) {\n"
        "  return v < lo ? lo : (v > hi ? hi : v);\n"
        "}\n"
        "__global__ void k(const float *x, const float *z, float *y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  y[i] = x[at(i + 1)] + z[clampi(i + 2, 0, n - 1)];\n"
        "}\n"
        "int main() { float *x, *z, *y; k<<<4096, 256>>>(x, z, y, 1 << 20); }\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(4096, 1, 1))
    strides = {r.buffer: r.lane_stride for r in a.counts.accesses}
    assert strides == {"x": 1.0, "z": 1.0, "y": 1.0}


def test_a_mirror_at_the_edge_keeps_the_lane_stride(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # x[abs(i - 1)] (a reflecting boundary: thread 0 reads x[1]) and z[abs(i - n)] (a reversed
    # row: i - n is negative for every thread, so abs(i - n) = n - i falls as i grows): a
    # warp's loads are 32 consecutive floats, lane strides 1 and -1. Before, abs had lost the
    # argument's growth across the lanes (stride unknown).
    src = (
        "__global__ void k(const float *x, const float *z, float *y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  y[i] = x[abs(i - 1)] + z[abs(i - n)];\n"
        "}\n"
        "int main() { float *x, *z, *y; k<<<4096, 256>>>(x, z, y, 1 << 20); }\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(4096, 1, 1))
    strides = {r.buffer: r.lane_stride for r in a.counts.accesses}
    assert strides == {"x": 1.0, "z": -1.0, "y": 1.0}


# a RAJA-style loop over a callable, and a functor for it; ``{call}``: main's call of it
_FORALL = (
    "#include <cstdlib>\n"
    "template <typename F> void forall(int n, F f) {{\n"
    "  #pragma omp target teams distribute parallel for\n"
    "  for (int i = 0; i < n; i++) f(i);\n"
    "}}\n"
    "struct Saxpy {{\n"
    "  float *x, *y; float a;\n"
    "  void operator()(int i) const {{ y[i] = a * x[i] + y[i]; }}\n"
    "}};\n"
    "int main() {{\n"
    "  int n = 1 << 20;\n"
    "  float *x = (float *)malloc(n * 4), *y = (float *)malloc(n * 4), a = 2.0f;\n"
    "  {call}\n"
    "}}\n"
)


@pytest.mark.parametrize(
    "call",
    [
        "forall(n, [=](int i) { y[i] = a * x[i] + y[i]; });",
        "auto k = [=](int i) { y[i] = a * x[i] + y[i]; };\n  forall(n, k);",
        "forall(n, Saxpy{x, y, a});",
    ],
)
def test_an_offload_region_runs_the_callable_its_function_is_given(
    gpu, tmp_path: Path, call: str
) -> None:  # type: ignore[no-untyped-def]
    """``forall(n, [=](int i) { y[i] = a * x[i] + y[i]; })``, the lambda held by a local,
    or a functor's temporary: the region's ``f(i)`` runs it, one FMA (2 FP32 FLOP) and 12 B
    per iteration over x and y's 2 x 4 MiB, and F is the closure's type or ``Saxpy``, as
    C++ deduces it, nothing assumed. Before, the lambda ran nothing (0 B, compute-bound)
    or, with another file of the folder defining a function ``f``, that function; and F
    was "assumed float"."""
    (tmp_path / "other.cpp").write_text("float f(int i) { return i * 3.0f + 1.0f; }\n")
    a = count(gpu, tmp_path, _FORALL.format(call=call), name="forall.cpp")
    assert not a.assumed_types
    assert a.counts.flops["fp32"] == pytest.approx(2.0)
    assert a.memory.references == 12 * (1 << 20)
    assert a.memory.footprint == 8 * (1 << 20)


def test_a_builtin_math_function_is_the_library_function(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # __builtin_fmaf(x, y, z) is fmaf: 2 FP32 FLOP (before: an unknown call, no FLOP)
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  x[i] = __builtin_fmaf(x[i], 2.0f, 1.0f);\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(2.0)


def test_an_offload_region_calls_the_function_its_template_is_given(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # bench<sub>: G(x, y) runs sub, 1 FLOP, twice a trip over 100 trips (before: G was no
    # function, and its calls counted no FLOP)
    src = (
        "float sub(float a, float b) { return a - b; }\n"
        "template <float (*G)(float, float)>\n"
        "void bench(float *d, int n) {\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: d[0:n])\n"
        "  for (int i = 0; i < n; i++) {\n"
        "    float x = d[i], y = 1.5f;\n"
        "    for (int r = 0; r < 100; r++) { x = G(x, y); y = G(y, x); }\n"
        "    d[i] = x + y;\n"
        "  }\n"
        "}\n"
        "int main() { float *d = new float[4096]; bench<sub>(d, 4096); }\n"
    )
    a = count(gpu, tmp_path, src, name="b.cpp")
    assert a.totals["fp32"] == pytest.approx(4096 * (2 * 100 + 1))


def test_a_lambda_called_where_it_is_written_runs_its_body(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `const float s = [&]() { ... }();` (an immediately invoked lambda): its load of x and
    # its multiply are the thread's, 1 FP32 FLOP and 4 + 4 bytes with y's store (before:
    # the lambda was not walked: no FLOP, no read of x)
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *x, float *y) {\n"
        "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  const float s = [&]() { return x[i] * 2.0f; }();\n"
        "  y[i] = s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(1.0)
    assert {(x.buffer, x.kind) for x in a.counts.accesses} == {("x", "load"), ("y", "store")}
