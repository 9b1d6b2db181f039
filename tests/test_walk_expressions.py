"""Counting rules of ``walk_expressions.py`` (arithmetic by precision) on small sources
(expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import LAUNCH, buffer_of, count, detected

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.roofline import Inputs, analyze
from roofline_lsp.model.config import Config
from roofline_lsp.syntax.declarations import Declarations, declarations


def _declarations(path: Path) -> Declarations:
    """The declarations of the file holding a kernel, as the counter reads them."""
    det = detect(path.read_bytes(), str(path))
    root = det.kernels[0].node
    assert root is not None
    while root.parent is not None:
        root = root.parent
    return declarations(root, det.macros)


def test_fma_and_precision_promotion(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # float * float + float: 2 FP32; float * 2.0 (double literal) promotes to fp64: 1 FP64;
    # 2.0f stays fp32: 1 FP32
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x, double *y) {\n"
        "  int i = threadIdx.x;\n"
        "  x[i] = x[i] * x[i] + 1.0f;\n"
        "  y[i] = x[i] * 2.0;\n"
        "  x[i] = x[i] * 2.0f;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(3.0)
    assert a.counts.flops["fp64"] == pytest.approx(1.0)


def test_a_double_operation_stored_into_a_float_runs_in_fp32(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # nvcc -arch=sm_86 -ptx (LLVM shrinks fptrunc(op(fpext x, C)) when C is exact in float):
    #   b[i] = a[i] * 2.0          add.f32            1 FP32
    #   float t = a[i] / 3.0       div.rn.f32         10 FP32 (an IEEE division)
    #   b[i] = (float)(a[i] - 1.5) sub.f32            1 FP32
    #   b[i] = a[i] * 0.1          mul.f64            1 FP64 (0.1 is not exact in float)
    #   b[i] = a[i] * 2.0 + 1.0    fma.rn.f64         2 FP64 (only the stored operation)
    #   b[i] = a[i] * c            mul.f64            1 FP64 (c: a double the host passes)
    #   p->x = a[i] * 0.5          mul.f32            1 FP32 (a struct's float field)
    a = count(
        gpu,
        tmp_path,
        "struct Pt { float x; };\n"
        "__global__ void k(const float *a, float *b, double c, Pt *p) {\n"
        "  int i = threadIdx.x;\n"
        "  p->x = a[i] * 0.5;\n"
        "  b[i] = a[i] * 2.0;\n"
        "  float t = a[i] / 3.0;\n"
        "  b[i + 1] = (float)(t - 1.5);\n"
        "  b[i + 2] = a[i] * 0.1;\n"
        "  b[i + 3] = a[i] * 2.0 + 1.0;\n"
        "  b[i + 4] = a[i] * c;\n"
        "}\n"
        "int main() { float *a, *b; Pt *p; k<<<1, 256>>>(a, b, 1.0, p); }\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(1 + 1 + 10 + 1)
    assert a.counts.flops["fp64"] == pytest.approx(1 + 2 + 1)


@pytest.mark.parametrize(
    "bound, trips",
    [
        ("sizeof(tmp) / sizeof(tmp[0])", 64),  # a local array's elements
        ("sizeof(float[16]) / sizeof(float)", 16),  # an array type
        ("sizeof(Row) / sizeof(float)", 8),  # a struct with an array member: 32 bytes
        ("sizeof(coef) / sizeof(*coef)", 32),  # a file-scope array
        ("sizeof(tmp[0])", 4),  # an element: unevaluated, no access booked
    ],
)
def test_sizeof_counts_whole_arrays_and_types(gpu, tmp_path: Path, bound: str, trips: int) -> None:  # type: ignore[no-untyped-def]
    # before, sizeof of an array variable was its element's size (64 / 4 -> 1 trip) and
    # sizeof of a struct type parsed as a name was 4
    src = (
        "struct Row { float v[8]; };\n"
        "__constant__ float coef[32];\n"
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float tmp[64];\n"
        "  float s = 0.f;\n"
        f"  for (int k = 0; k < {bound}; k++) s += a[i * 64 + k];\n"
        "  b[i] = s + tmp[i & 63];\n"
        "}\n"
        "int main() { float *a, *b; k<<<64, 256>>>(a, b); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert [(lp.var, lp.trips) for lp in a.counts.loops] == [("k", trips)]
    assert not any(
        x.buffer == "tmp" and x.kind == "load" and x.weight > 1 for x in a.counts.accesses
    )


def test_division_and_special_functions(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # fp32 a / b: 10 FLOP + 2 int; a / 4.0f by a power of two: 1 FMUL; expf: 10 + 2;
    # sqrt(double): 14 + 4; __expf intrinsic: 2
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x, double *d) {\n"
        "  int i = threadIdx.x;\n"
        "  float v = x[i] / x[i + 1];\n"
        "  v = v / 4.0f;\n"
        "  v = expf(v) + __expf(v);\n"
        "  d[i] = sqrt(d[i]);\n"
        "  x[i] = v;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(10 + 1 + 10 + 2 + 1)
    assert a.counts.flops["fp64"] == pytest.approx(14)


@pytest.mark.parametrize(("build", "fp32"), [("nvcc", 6 + 6), ("clang", 0 + 6)])
def test_sqrtf_follows_the_build_compiler(gpu, tmp_path: Path, build, fp32) -> None:  # type: ignore[no-untyped-def]
    # sqrtf: nvcc's sqrt.rn.f32 is MUFU.RSQ + 2 FMUL + 2 FFMA (6 FLOP); clang's libdevice
    # takes sqrt.approx.f32, one MUFU.SQRT (0 FLOP). __fsqrt_rn is sqrt.rn.f32 in both (6);
    # sqrt of a double is IEEE in both (14 FP64). Integer instructions: the same in both (the
    # source counter keeps the 2 of the IEEE form, costs.SQRT_APPROX_F32).
    src = (
        "__global__ void k(float *x, double *d) {\n"
        "  int i = threadIdx.x;\n"
        "  x[i] = sqrtf(x[i]) + __fsqrt_rn(x[i + 1]);\n"
        "  d[i] = sqrt(d[i]);\n"
        "}\n"
    )
    det = detected(tmp_path, src)
    a = analyze(det.kernels[0], det, gpu, Inputs(**LAUNCH), Config(build_compiler=build))
    clang = analyze(det.kernels[0], det, gpu, Inputs(**LAUNCH), Config(build_compiler="clang"))
    assert a.counts.flops["fp32"] - 1 == pytest.approx(fp32)  # + the FADD of the two roots
    assert a.counts.flops["fp64"] == pytest.approx(14)
    assert a.counts.int_ops == pytest.approx(clang.counts.int_ops)


def test_openmp_sqrtf_is_clangs_whatever_the_build(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # OpenMP offload is clang's: sqrtf is libdevice's approximation (0 FLOP); the FADD stays
    src = (
        "#include <math.h>\n"
        "void f(float *x, int n) {\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: x[0:n])\n"
        "  for (int i = 0; i < n; i++) x[i] = sqrtf(x[i]) + 1.0f;\n"
        "}\n"
    )
    det = detected(tmp_path, src, "k.cpp")
    a = analyze(det.kernels[0], det, gpu, Inputs(), Config(build_compiler="nvcc"))
    assert a.counts.flops["fp32"] == pytest.approx(1.0)


def test_a_repeated_pure_value_is_computed_once(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # nvcc and clang compute a math call or a division once when the same operands appear
    # again where the first computation dominates (common-subexpression elimination):
    #   a = pow(t / 1e3, -0.2) * sqrt(t)        div 16 + pow 129 + sqrt 14 + mul 1  = 160
    #   b = 2.0 * pow(t / 1e3, -0.2)            the same division and pow: mul 1    = 1
    #   if (t > 1.0) c[i] = pow(t / 1e3, -0.2)  dominated: reused                   = 0
    #   if (t > 2.0) b = sqrt(t / 3.0)          div 16 + sqrt 14 at the default 0.5 = 15
    #   b += sqrt(t / 3.0)                      not dominated by the branch: 30 + 1 = 31
    #   t = t * 2.0                             mul 1                               = 1
    #   b += pow(t / 1e3, -0.2)                 t changed: div 16 + pow 129 + add 1 = 146
    #   b += pow(x[i], 2.0) * pow(x[i], 2.0)    reads memory: twice 129 + mul + add = 260
    #   x[i] = a + b                            add 1                               = 1
    src = (
        "__global__ void k(double *x, double *c, double t) {\n"
        "  int i = threadIdx.x;\n"
        "  double a = pow(t / 1e3, -0.2) * sqrt(t);\n"
        "  double b = 2.0 * pow(t / 1e3, -0.2);\n"
        "  if (t > 1.0) c[i] = pow(t / 1e3, -0.2);\n"
        "  if (t > 2.0) b = sqrt(t / 3.0);\n"
        "  b += sqrt(t / 3.0);\n"
        "  t = t * 2.0;\n"
        "  b += pow(t / 1e3, -0.2);\n"
        "  b += pow(x[i], 2.0) * pow(x[i], 2.0);\n"
        "  x[i] = a + b;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    assert a.counts.flops["fp64"] == pytest.approx(160 + 1 + 0 + 15 + 31 + 1 + 146 + 260 + 1)


def test_fp64_division_runs_an_fp32_range_check(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # an IEEE fp64 division is 16 FP64 FLOP + 4 int and one FFMA range check (2 FP32 FLOP);
    # ``/=`` the same; a reciprocal 1.0 / x has no check; atan2 divides (its 2 FP32 FLOP);
    # a division by 2.0 is a multiply. fp64: 16 + 16 + (16 + 1) + (50 + 1) = 100;
    # fp32: 2 + 2 + 2 = 6
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(double *d) {\n"
        "  int i = threadIdx.x;\n"
        "  double v = d[i] / d[i + 1];\n"
        "  v /= d[i + 2];\n"
        "  v = v + 1.0 / d[i + 3];\n"
        "  d[i] = atan2(v, 2.0) / 2.0;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp64"] == pytest.approx(16 + 16 + 16 + 1 + 50 + 1)
    assert a.counts.flops["fp32"] == pytest.approx(2 + 2 + 2)


def test_one_division_serves_quotient_and_remainder(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a 32-bit division by a variable costs 20 int ops; k % n after k / n reuses the quotient
    # (one multiply-add: 19 fewer than a second division), a repeated k / n costs nothing
    def ints(expr: str) -> float:
        src = (
            "__global__ void k(int *x, int n, int m) {\n"
            "  int i = threadIdx.x;\n"
            f"  x[i] = {expr};\n"
            "}\n"
        )
        return count(gpu, tmp_path, src, **LAUNCH).counts.int_ops

    apart = ints("i / n + i % m")
    assert apart - ints("i / n + i % n") == pytest.approx(19.0)
    assert ints("i / n + i / m") - ints("i / n + i / n") == pytest.approx(20.0)
    assert ints("i / n + i / m") == pytest.approx(apart)


@pytest.mark.parametrize(
    ("divisor", "cost"),
    [
        ("n", 20.0),  # a kernel argument: the launch passes 48, but only at run time
        ("W", 4.0),  # #define W 48: a multiply-high and shifts
        ("V", 4.0),  # const int V = 48 at file scope
        ("(W / 2)", 4.0),  # arithmetic of constants is a constant
        ("c", 4.0),  # const int c = 48 in the kernel
        ("d", 20.0),  # const int d = n: const, but only the run fixes it
        ("B", 4.0),  # a template parameter (the launch instantiates k<48>)
    ],
)
def test_a_division_costs_a_constant_one_only_by_a_constant_the_compiler_sees(
    gpu, tmp_path: Path, divisor: str, cost: float
) -> None:  # type: ignore[no-untyped-def]
    # i / 48 costs 4 (IMAD.HI + shifts) when the compiler sees the 48, and the 20 of the
    # reciprocal sequence when only the run gives it, however well the estimate knows it
    def ints(expr: str) -> float:
        src = (
            "#define W 48\n"
            "const int V = 48;\n"
            "template <int B> __global__ void k(int *x, int n) {\n"
            "  int i = threadIdx.x;\n"
            "  const int c = 48;\n"
            "  const int d = n;\n"
            f"  x[i] = {expr};\n"
            "}\n"
            "int main() { int *x; k<48><<<1024, 256>>>(x, 48); }\n"
        )
        return count(gpu, tmp_path, src, **LAUNCH).counts.int_ops

    # the same expression with an add for the division: an add of a value the same for every
    # thread costs half an instruction (it folds into the next IADD3 or IMAD half the time)
    assert ints(f"i / {divisor}") - ints(f"i + {divisor}") == pytest.approx(cost - 0.5)


def test_a_loop_divides_by_an_unchanging_value_without_its_reciprocal(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # j % m in an 8-trip loop: nvcc hoists m's reciprocal out of the loop and each trip runs
    # the 12 instructions of the estimate and its corrections (sm_86 SASS); j % (m + j)
    # divides by a new value each trip: the whole 20, plus the add
    def ints(expr: str) -> float:
        src = (
            "__global__ void k(int *x, int m) {\n"
            "  for (int j = 0; j < 8; j++)\n"
            f"    x[j * blockDim.x + threadIdx.x] = {expr};\n"
            "}\n"
        )
        return count(gpu, tmp_path, src, **LAUNCH).counts.int_ops

    plain = ints("j + m")
    assert ints("j % m") - plain == pytest.approx(8 * (12.0 - 1.0))
    assert ints("j % (m + j)") - plain == pytest.approx(8 * 20.0)


def test_a_64_bit_division_of_32_bit_values_costs_a_32_bit_one_and_a_test(
    gpu, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # nvcc divides 64-bit operands whose high words are zero (indices, sizes) as 32-bit
    # unsigned ones after testing them (LOP3 + ISETP): 20 + 2, not the ~70 of the slow path
    def ints(ty: str) -> float:
        src = (
            f"__global__ void k({ty} *x, {ty} n) {{\n  {ty} i = threadIdx.x;\n  x[i] = i / n;\n}}\n"
        )
        return count(gpu, tmp_path, src, **LAUNCH).counts.int_ops

    assert ints("int") == pytest.approx(23.0)  # the index 1, the division 20, the store 2
    assert ints("long") == pytest.approx(25.0)


def test_arithmetic_on_values_of_unknown_type_is_not_integer_work(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # real_t comes from a header that is not there: a * b + a and a / b may be floating-point
    # work of either precision, so neither is charged as integer instructions (an int a / b
    # would cost a 20-op division); the kernel's own index arithmetic still is (4 int ops)
    def counts(ty: str, expr: str) -> tuple[float, float]:
        src = (
            '#include "defs.h"\n'
            f"__global__ void k({ty} *x, {ty} *y) {{\n"
            "  int i = threadIdx.x;\n"
            f"  {ty} a = x[i];\n"
            f"  {ty} b = y[i];\n"
            f"  y[i] = {expr};\n"
            "}\n"
        )
        c = count(gpu, tmp_path, src, **LAUNCH).counts
        return c.int_ops, sum(c.flops.values())

    base = counts("real_t", "a")[0]
    assert counts("real_t", "a * b + a") == (pytest.approx(base), 0.0)
    assert counts("real_t", "a / b") == (pytest.approx(base), 0.0)
    assert counts("int", "a / b")[0] == pytest.approx(base + 20.0)


def test_lane_strides_of_index_expressions(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # how far apart consecutive threads' elements are, by hand: x is the lane (the innermost
    # collapsed loop); C(x, y, z, L) expands to (z*L*L + y*L + x): 1 (with its parameters'
    # parentheses kept, `(L)+(y)` would parse as a cast of `+(y)` to a type `L`). Lanes
    # folded onto fewer elements (x >> 1: pairs of lanes; x % 4: four lanes repeating) have
    # no single stride
    src = (
        "#define C(x, y, z, L) ((z)*(L)*(L)+(y)*(L)+(x))\n"
        "void f(const float *a, float *b, int L) {\n"
        "  #pragma omp target teams distribute parallel for collapse(3)\n"
        "  for (int z = 0; z < L; z++)\n"
        "    for (int y = 0; y < L; y++)\n"
        "      for (int x = 0; x < L; x++) {\n"
        "        int row = x * L;\n"  # 32 elements apart
        "        b[z * L * L + y * L + x] = a[row + y] + a[(x >> 1) + 7]\n"  # 1; None
        "          + a[x * 2 - 5] + a[x % 4] + a[C(x, y, z, L)];\n"  # 2; None; 1
        "      }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="f.cpp", values=(("L", 32.0),))
    strides = {x.index: x.lane_stride for x in a.counts.accesses}
    assert strides == {
        "z * L * L + y * L + x": 1.0,
        "row + y": 32.0,
        "(x >> 1) + 7": None,
        "x * 2 - 5": 2.0,
        "x % 4": None,
        "C(x, y, z, L)": 1.0,
    }


def test_arithmetic_on_union_fields_is_counted(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `union un { float f; unsigned int ui; }`: u.f is a float (the bit tricks of an SVD
    # through .ui are integer work): 2 FMUL + 1 FADD = 3 FP32; the union is 4 B, not 8
    src = (
        "union un { float f; unsigned int ui; };\n"
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  un u, v;\n"
        "  u.f = a[i];\n"
        "  v.f = u.f * u.f + u.f * 0.5f;\n"
        "  b[i] = v.f;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    assert a.counts.flops["fp32"] == pytest.approx(3.0)
    assert _declarations(tmp_path / "k.cu").struct_sizes["un"] == 4


def test_a_struct_element_counts_its_array_fields_whole(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 12 floats and a float[4]: 64 B per particle (the array field was counted as one
    # float, 52 B); copying one particle per thread moves 64 B each way
    src = (
        "struct Particle { float x, y, z, w, vx, vy, vz, m, fx, fy, fz, q; float pad[4]; };\n"
        "__global__ void k(const Particle *in, Particle *out) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  out[i] = in[i];\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    assert {(x.buffer, x.elem) for x in a.counts.accesses} == {("in", 64), ("out", 64)}


def test_a_cast_index_keeps_its_range_and_stride(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # static_cast<size_t>(i) * 4 over 1024 x 256 threads: elements 0..1,048,572, lanes 4
    # apart; int(i) and static_cast<int>(i): 0..262,143, lanes 1 apart
    src = (
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  size_t j = static_cast<size_t>(i) * 4;\n"
        "  b[static_cast<int>(i)] = a[j] + a[int(i)];\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    got = {x.index: (x.lane_stride, x.interval) for x in a.counts.accesses}
    assert got == {
        "j": (4.0, (0.0, 1048572.0)),
        "int(i)": (1.0, (0.0, 262143.0)),
        "static_cast<int>(i)": (1.0, (0.0, 262143.0)),
    }


def test_a_thread_dependent_remainder_bounds_loops_by_its_mean(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # own = idx % 1024 over 2^18 threads takes 0..1023 evenly: mean 511.5, so the
    # triangular loop runs 511.5 trips on average (it had the 16-trip default); q = own / 4
    # (mean 127.875) walked from the lane (mean 15.5) by 32: (127.875 - 15.5) / 32 + 0.5 =
    # 4.01 trips. One FP32 add per trip.
    src = (
        "__global__ void tri(const float *a, float *out, int n) {\n"
        "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  int own = idx % 1024;\n"
        "  float s = 0.f;\n"
        "  for (int j = 0; j < own; j++) s += a[j];\n"
        "  int q = own / 4;\n"
        "  for (int j = threadIdx.x % 32; j < q; j += 32) s += a[j];\n"
        "  out[idx] = s;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    trips = sorted(round(loop.trips, 2) for loop in a.counts.loops)
    assert trips == [4.01, 511.5]
    assert a.counts.flops["fp32"] == pytest.approx(511.5 + 4.01, abs=0.01)


def test_struct_sizes_count_macro_sized_and_aliased_arrays(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `float v[N]` with N a macro (8) is 32 B, not one float; `Row` is `int[2 * N]`, 64 B;
    # `Grid` holds two Rows and a double: 136 B. A `__device__ Row` global has 16 elements
    src = (
        "#define N 8\n"
        "typedef int Row[2 * N];\n"
        "struct Vec { float v[N]; };\n"
        "struct Grid { Row a, b; double t; };\n"
        "__device__ Row table;\n"
        "__global__ void k(Grid *g, Vec *x) { x[threadIdx.x].v[0] = g->a[threadIdx.x]; }\n"
    )
    path = tmp_path / "k.cu"
    path.write_text(src)
    d = _declarations(path)
    assert (d.struct_sizes["Vec"], d.struct_sizes["Grid"]) == (32, 136)
    assert d.globals["table"].elements == 16


def test_a_global_pointer_has_no_extent_of_its_own(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the alignedTypes sample keeps `unsigned char *d_idata` at file scope and names its
    # kernel's parameter the same: the pointer's target is allocated elsewhere, so it
    # does not cap the parameter's buffer at one element (before: a 1 B working set for
    # 1024 x 256 threads copying a byte each, 256 kB)
    src = (
        "unsigned char *d_idata, *d_odata;\n"
        "__device__ float table[64];\n"
        "__global__ void k(unsigned char *d_odata, unsigned char *d_idata) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  d_odata[i] = d_idata[i];\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    loaded = {b.buffer: b.footprint for b in a.memory.buffers}
    assert loaded["d_idata"] == 1024 * 256
    d = _declarations(tmp_path / "k.cu")
    assert d.globals["d_idata"].elements is None and d.globals["table"].elements == 64


def test_a_block_s_share_chosen_per_block_takes_the_value_most_blocks_take(
    gpu, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # 64 blocks of 256 threads split n = 2^22 elements: region = 65536 each, the last
    # block's stop is n (the remainder). 63 of 64 blocks stop at start + region, so a
    # thread's loop runs (65536 - 127.5) / 256 + 0.5 = 256.0 trips (from its lane, mean
    # 127.5, by 256, half a trip for the lanes' spread); the conditional used to have no
    # value and the loop its 16-trip default.
    src = (
        "__global__ void scan(const unsigned *in, unsigned *out, int n) {\n"
        "  int region = n / gridDim.x;\n"
        "  int start = blockIdx.x * region;\n"
        "  int stop = (blockIdx.x == gridDim.x - 1) ? n : start + region;\n"
        "  for (int i = start + threadIdx.x; i < stop; i += blockDim.x)\n"
        "    out[i] = in[i] + 1u;\n"
        "}\n"
        "int main() { unsigned *a, *b; scan<<<64, 256>>>(a, b, 1 << 22); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert [(round(loop.trips, 2), loop.source) for loop in a.counts.loops] == [
        (256.0, "grid-stride")
    ]
    # the same as min(start + region, n)
    clamped = src.replace(
        "(blockIdx.x == gridDim.x - 1) ? n : start + region", "min(start + region, n)"
    )
    assert [round(loop.trips, 2) for loop in count(gpu, tmp_path, clamped).counts.loops] == [256.0]
    # a lane-dependent choice has no one value: the count is the mean over sampled threads
    # (estimate/sampled_trips.py). Lane 0 runs on to n, but it is 1 thread in 256 and
    # seldom drawn: the other lanes' 256 trips (the exact mean is 287.5, 12% more)
    lane = count(gpu, tmp_path, src.replace("blockIdx.x == gridDim.x - 1", "threadIdx.x == 0"))
    assert [(round(loop.trips), loop.source) for loop in lane.counts.loops] == [
        (256, "mean over the threads")
    ]


def test_a_compound_assignment_of_a_double_into_a_float_runs_in_double(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # nvcc -arch=sm_86 -ptx, per thread:
    #   s += a[i] * 0.25   s = (float)((double)s + (double)a[i] * 0.25): fma.rn.f64  2 FP64
    #   s += 0.5           a constant exact in float: add.f32                        1 FP32
    #   s *= a[i + 1]      float by float: mul.f32                                   1 FP32
    # Before: the add of the first counted in the float it is stored into (1 FP32 + 1 FP64).
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = threadIdx.x;\n"
        "  float s = b[i];\n"
        "  s += a[i] * 0.25;\n"
        "  s += 0.5;\n"
        "  s *= a[i + 1];\n"
        "  b[i] = s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp64"] == pytest.approx(2)
    assert a.counts.flops["fp32"] == pytest.approx(2)


def test_const_literal_locals_and_conditionals_narrow_like_literals(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # nvcc -arch=sm_86 -ptx (clang's OpenMP offload does the same), per thread:
    #   const double h = 0.5; b[i] = a[i] * h      the constant folds: mul.f32         1 FP32
    #   b[i] = a[i] > 0 ? a[i] * 1.5 : 0.0         the truncation moves into the arms:
    #                                              mul.f32 on the taken arm (p = 0.5)  0.5 FP32
    #   b[i] = a[i] > 0 ? a[i] * 1.5 + 1.0 : ...   an arm of two operations: the select is
    #                                              double, fma.rn.f64 (p = 0.5)        1 FP64
    #   b[i] = a[i] * d (d a double argument)      mul.f64                             1 FP64
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *a, float *b, double d) {\n"
        "  const double h = 0.5;\n"
        "  int i = threadIdx.x;\n"
        "  b[i] = a[i] * h;\n"
        "  b[i + 1] = a[i] > 0 ? a[i] * 1.5 : 0.0;\n"
        "  b[i + 2] = a[i] > 0 ? a[i] * 1.5 + 1.0 : 0.0;\n"
        "  b[i + 3] = a[i] * d;\n"
        "}\n"
        "int main() { float *a, *b; k<<<1, 256>>>(a, b, 0.5); }\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(1 + 0.5)
    assert a.counts.flops["fp64"] == pytest.approx(1 + 1)


def test_a_macro_constant_has_the_type_its_literal_is_written_in(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # nvcc -arch=sm_86 -ptx, per thread:
    #   b[i] = a[i] * TENTH       TENTH 0.1 is a double, not exact in float: mul.rn.f64   1 FP64
    #   b[i + 1] = a[i] * HALF    0.5 is exact: narrowed to mul.f32                       1 FP32
    #   s += a[i] * TWO  (x 8)    a compound add of a double: fma.rn.f64 per trip        16 FP64
    #   c[i] = a[i] * RC          RCONST(0.5) pastes an f: its type is the call's        1 FP32
    # Before, every fractional macro was a float: 0.1 and the compound add counted FP32.
    a = count(
        gpu,
        tmp_path,
        "#define TENTH 0.1\n"
        "#define HALF (0.5)\n"
        "#define TWO 2.0\n"
        "#define RCONST(x) x##f\n"
        "#define RC RCONST(0.5)\n"
        "__global__ void k(const float *a, float *b, float *c) {\n"
        "  int i = threadIdx.x;\n"
        "  b[i] = a[i] * TENTH;\n"
        "  b[i + 1] = a[i] * HALF;\n"
        "  float s = 0.f;\n"
        "  for (int j = 0; j < 8; j++) s += a[j] * TWO;\n"
        "  c[i] = a[i] * RC + s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp64"] == pytest.approx(1 + 16)
    assert a.counts.flops["fp32"] == pytest.approx(1 + 1 + 1)


def test_a_file_scope_constant_has_its_declared_type(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # nvcc -arch=sm_86 -ptx: const double kTenth = 0.1 makes a[i] * kTenth a mul.rn.f64
    # (1 FP64); const float kHalf = 0.5 a mul.f32 (1 FP32). Before, both were floats (the
    # type was read from the value 0.1, not from the declaration).
    a = count(
        gpu,
        tmp_path,
        "const double kTenth = 0.1;\n"
        "const float kHalf = 0.5;\n"
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = threadIdx.x;\n"
        "  b[i] = a[i] * kTenth;\n"
        "  b[i + 1] = a[i] * kHalf;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp64"] == pytest.approx(1.0)
    assert a.counts.flops["fp32"] == pytest.approx(1.0)


def test_a_parenthesized_element_before_a_sign_is_not_a_cast(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `(a[k]) + 0.3f * (...)` parses as a cast of `+0.3f` to an array type `a[k]` (C has
    # no cast to an array type); read as the sum it is: per trip a sub, a mul, two adds =
    # 4 FP32 FLOP (nvcc -ptx: 256 over 64 trips; 128 before, the add and a load lost)
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  for (int k = 0; k < 64; k++) s += ((a[k]) + 0.3f * ((a[i]) - (a[k])));\n"
        "  b[i] = s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(256)
    assert any(x.buffer == "a" and x.index.replace(" ", "") == "k" for x in a.counts.accesses)


def test_sizeof_a_type_spelled_as_a_macro_is_the_type_s_size(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `sizeof(TYPE)` with `#define TYPE unsigned long` parses as an expression, not a type:
    # n = 2^31 / 8 = 2^28 words over 1024 x 256 threads is 1024 trips of the grid-stride
    # loop (with the 4-byte default it was 2048)
    src = (
        "#define TYPE unsigned long\n"
        "__global__ void k(char *ptr, unsigned long size, TYPE p1) {\n"
        "  TYPE *buf = (TYPE *)ptr;\n"
        "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  unsigned long n = size / sizeof(TYPE);\n"
        "  for (int i = idx; i < n; i += gridDim.x * blockDim.x)\n"
        "    buf[i] = p1;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, values={"size": 2.0**31}, **LAUNCH)
    (loop,) = a.counts.loops
    assert loop.trips == pytest.approx(1024)


def test_the_c_library_constants_have_their_values_and_types(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # <math.h> is not read: M_PI is a double, so a float times M_PI runs in double (nvcc
    # keeps the DMUL: pi is not exact in float), while 2.0 is exact and the multiply stays
    # FP32; INT_MAX is 2^31 - 1, so ``t < INT_MAX`` holds for every thread (one FP32 add)
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *x, float *y, float *z) {\n"
        "  int t = threadIdx.x;\n"
        "  y[t] = x[t] * M_PI;\n"
        "  z[t] = x[t] * 2.0;\n"
        "  if (t < INT_MAX) z[t] += 1.0f;\n"
        "}\n",
        **LAUNCH,
    )
    assert (a.counts.flops["fp64"], a.counts.flops["fp32"]) == (1.0, 2.0)


def test_a_team_shared_scalar_keeps_the_range_its_threads_give_it(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 1024 blocks of 256 threads. ``base = 16 * (blockIdx.x / 4)`` ranges over [0, 4080]
    # and ``threadIdx.x / 16`` over [0, 15]: ``base + threadIdx.x / 16 < 4096`` holds for
    # every thread, so its FMA (2 FP32 FLOP) counts fully, as for the same value in a
    # local. ``top`` is set again in its loop (a search window): over the loop its value
    # is no longer the one before it, so ``top < 8`` is a guess (half): 1 FLOP per trip,
    # 8 trips.
    src = (
        "__global__ void k(const float *a, float *out) {\n"
        "  __shared__ int base;\n"
        "  __shared__ int top;\n"
        "  base = 16 * (blockIdx.x / 4);\n"
        "  top = 0;\n"
        "  float s = 0.f;\n"
        "  if (base + threadIdx.x / 16 < 4096) s += a[threadIdx.x] * 2.0f;\n"
        "  for (int t = 0; t < 8; t++) {\n"
        "    if (top < 8) s += a[t] * 3.0f;\n"
        "    top = (int)a[t + 8];\n"
        "  }\n"
        "  out[blockIdx.x * 256 + threadIdx.x] = s;\n"
        "}\n"
        "int main() { float *a, *o; k<<<1024, 256>>>(a, o); }\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(1024, 1, 1))
    assert a.counts.flops["fp32"] == pytest.approx(2.0 + 8 * 2 * 0.5)


def test_a_sign_change_stored_as_it_is_costs_one_flop(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a complex conjugate's `b.im = -a.im` and a stored `fabsf`: no arithmetic takes the sign
    # as an operand modifier, so ptxas makes each an add (nvcc, sm_86 SASS: `DADD R14, -RZ,
    # -R8`, `FADD R17, |R8|, -RZ`): 1 FP64 + 1 FP32 FLOP. A subtracted product takes the
    # sign as a modifier: `1.0 - c[i] * c[i]` is one `DFMA R2, -R2, R2, 1`, 2 FP64 FLOP. The
    # copied real part is no arithmetic. Per thread: FP64 1 + 2 = 3, FP32 1.
    a = count(
        gpu,
        tmp_path,
        "struct cplx { double re, im; };\n"
        "__global__ void k(const cplx *a, cplx *b, const float *x, float *y, double *c) {\n"
        "  int i = threadIdx.x;\n"
        "  b[i].re = a[i].re;\n"
        "  b[i].im = -a[i].im;\n"
        "  y[i] = fabsf(x[i]);\n"
        "  c[i] = 1.0 - c[i] * c[i];\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp64"] == pytest.approx(3)
    assert a.counts.flops["fp32"] == pytest.approx(1)


def test_an_atomic_capture_hands_each_iteration_a_slot_of_its_own(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # ``#pragma omp atomic capture`` of pos = counter[0]++: each of the 65,536 iterations
    # gets its own pos, so out[pos] writes 65,536 floats (256 kB), not the one float of a
    # value read at one address
    src = (
        "void k(const float *in, float *out, int *counter) {\n"
        "  #pragma omp target teams distribute parallel for map(to: in[0:65536])\n"
        "  for (int i = 0; i < 65536; i++) {\n"
        "    int pos;\n"
        "    #pragma omp atomic capture\n"
        "    pos = counter[0]++;\n"
        "    out[pos] = in[i];\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="capture.cpp")
    out = buffer_of(a, "out")
    assert out.footprint == 65536 * 4


def test_a_clamp_written_as_conditionals_keeps_the_lane_stride(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # k < 0 ? 0 : (k > n - 1 ? n - 1 : k) takes a bound only at the edges: the load reads
    # consecutive floats across a warp's lanes (stride 1), not an unknown pattern
    src = (
        "__global__ void k(const float *x, float *y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  int k = i - 1;\n"
        "  y[i] = x[k < 0 ? 0 : (k > n - 1 ? n - 1 : k)];\n"
        "}\n"
        "int main() { float *x, *y; k<<<4096, 256>>>(x, y, 1 << 20); }\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(4096, 1, 1))
    (load,) = (r for r in a.counts.accesses if r.buffer == "x")
    assert load.lane_stride == 1.0


def test_inline_ptx_asm_counts_its_instructions_and_reads_its_operands(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a microbenchmark's FMA chain in inline PTX: 2 FLOP a trip, 100 trips (before: no FLOP
    # and 2 integer instructions per asm statement); the input operand x[i] is a load
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *x, float *y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float v = 0.f;\n"
        "  for (int r = 0; r < 100; r++)\n"
        '    asm volatile("fma.rn.f32 %0, %1, %1, %0;" : "+f"(v) : "f"(x[i]));\n'
        "  y[i] = v;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(200.0)
    assert {x.buffer for x in a.counts.accesses} == {"x", "y"}


def test_a_pack_expansion_over_an_integer_sequence_runs_once_per_element(  # type: ignore[no-untyped-def]
    gpu, tmp_path: Path
) -> None:
    # `(x[i + I] + ...)` in a lambda taking `std::integer_sequence<int, I...>`, given
    # `std::make_integer_sequence<int, 4>()`: four loads, x[i + 0] .. x[i + 3], and three
    # adds between them (3 FP32 FLOP); `{y[j + I]...}` of the same pack: four loads of y
    a = count(
        gpu,
        tmp_path,
        "#include <utility>\n"
        "__global__ void k(const float *x, const float *y, float *z) {\n"
        "  const int t = blockIdx.x * blockDim.x + threadIdx.x, i = 4 * t;\n"
        "  const float s = [&]<int... I>(std::integer_sequence<int, I...>) {\n"
        "    return (x[i + I] + ...);\n"
        "  }(std::make_integer_sequence<int, 4>());\n"
        "  auto v = [&]<int... I>(std::integer_sequence<int, I...>) {\n"
        "    return float4{y[i + I]...};\n"
        "  }(std::make_integer_sequence<int, 4>());\n"
        "  z[t] = s + v.x;\n"
        "}\n",
        **LAUNCH,
    )
    loads = {x.buffer: 0.0 for x in a.counts.accesses}
    for x in a.counts.accesses:
        if x.kind == "load":
            loads[x.buffer] += x.weight
    assert loads["x"] == pytest.approx(4.0) and loads["y"] == pytest.approx(4.0)
    # the fold's 3 adds and `s + v.x`
    assert a.counts.flops["fp32"] == pytest.approx(4.0)
    # the elements are the pack's values: x[i] .. x[i + 3], one contiguous run per thread
    assert sorted(x.offset[1] for x in a.counts.accesses if x.buffer == "x" and x.offset) == [
        0.0,
        1.0,
        2.0,
        3.0,
    ]
