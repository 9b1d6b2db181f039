"""Counting rules of ``counting.py`` on small sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.roofline import Analysis, Inputs, analyze
from roofline_lsp.model.gpus import load_registry


@pytest.fixture(scope="module")
def gpu():  # type: ignore[no-untyped-def]
    return load_registry().get("rtx3080")


def count(gpu, tmp_path: Path, src: str, name: str = "k.cu", **inputs) -> Analysis:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(src)
    det = detect(path.read_bytes(), str(path))
    assert det.kernels, "no kernel detected"
    return analyze(det.kernels[0], det, gpu, Inputs(**inputs))


LAUNCH = dict(block=(256, 1, 1), grid=(1024, 1, 1))


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


def test_division_and_special_functions(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # fp32 a / b: 10 FLOP + 2 int; a / 4.0f by a power of two: 1 FMUL; expf: 8 + 2;
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
    assert a.counts.flops["fp32"] == pytest.approx(10 + 1 + 8 + 2 + 1)
    assert a.counts.flops["fp64"] == pytest.approx(14)


def test_loop_trip_counts(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "#define N 100\n"
        "__global__ void k(float *x, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  for (int a = 0; a < N; a += 2) s += x[a];\n"  # 50, constant
        "  for (int b = 0; b <= m; b++) s += x[b];\n"  # m + 1 from the launch argument
        "  for (int c = 1; c < 1024; c *= 2) s += x[c];\n"  # 10 (1, 2, ..., 512)
        "  for (int d = i; d < 1 << 20; d += blockDim.x * gridDim.x) s += x[d];\n"
        "  for (int e = 0; e < *x; e++) s += 1.0f;\n"  # data-dependent: default 16
        "  x[i] = s;\n"
        "}\n"
        "int main() { float *x; k<<<1024, 256>>>(x, 9); }\n"
    )
    a = count(gpu, tmp_path, src)
    trips = {lp.var: (lp.trips, lp.source) for lp in a.counts.loops}
    assert trips["a"] == (50, "constant")
    assert trips["b"] == (10, "argument")
    assert trips["c"] == (10, "constant")
    # grid-stride over 2^20 elements with 2^18 threads: 4 per thread on average
    assert trips["d"] == (pytest.approx(4.0), "grid-stride")
    assert trips["e"] == (16, "default")


def test_nested_unknown_loops_are_damped(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x, int *n) {\n"
        "  for (int i = 0; i < n[0]; i++)\n"
        "    for (int j = 0; j < n[1]; j++)\n"
        "      x[j] += 1.0f;\n"
        "}\n",
        **LAUNCH,
    )
    # 16 outer trips (default_trips), 16 / 4 inner ones (nested_default): 64 FADD, not 256
    assert [lp.trips for lp in a.counts.loops] == [16, 4]
    assert a.counts.flops["fp32"] == pytest.approx(64)


def test_branch_probabilities(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x) {\n"
        "  int t = threadIdx.x;\n"
        "  if (t < 64) x[t] += 1.0f;\n"  # 64 / 256 of the threads
        "  if (t == 0) x[0] += 1.0f;\n"  # 1 / 256
        "  if (t % 2 == 0) x[t] *= 2.0f;\n"  # t % 2 in [0, 1]: 1 / 2
        "  if (x[t] > 0.f) x[t] -= 1.0f; else x[t] += 1.0f;\n"  # data: 0.5 + 0.5
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(64 / 256 + 1 / 256 + 0.5 + 1.0)


def test_early_return_scales_the_rest(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # n = 1000 elements over 1024 x 256 threads: 1000 / 262144 of the threads continue
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  x[i] = x[i] * 3.0f + 1.0f;\n"
        "}\n"
        "int main() { float *x; k<<<1024, 256>>>(x, 1000); }\n",
    )
    assert a.counts.flops["fp32"] == pytest.approx(2 * 1000 / 262144)
    assert a.counts.weights[4] == pytest.approx(1000 / 262144)


def test_bound_check_infers_problem_size(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # n is unknown, but `if (i >= n) return` says the launch covers n: the j loop runs
    # over 1024 x 256 elements (not the 16-trip default)
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *x, float *y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  float s = 0.f;\n"
        "  for (int j = 0; j < n; j++) s += x[j];\n"
        "  y[i] = s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.loops[0].trips == 1024 * 256


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


def test_pragma_unroll_removes_loop_control(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    body = (
        "__global__ void k(float *x, int n) {\n"
        "  float s = 0.f;\n"
        "  {P}\n"
        "  for (int j = 0; j < n; j++) s += 1.0f;\n"
        "  x[threadIdx.x] = s;\n"
        "}\n"
        "int main() { float *x; k<<<1, 256>>>(x, 64); }\n"
    )
    plain = count(gpu, tmp_path, body.replace("{P}", ""), name="a.cu")
    unrolled = count(gpu, tmp_path, body.replace("{P}", "#pragma unroll"), name="b.cu")
    # loop control (j < n, j++) runs 64 / 4 times when unrolled by nvcc's default 4,
    # never when fully unrolled
    assert plain.counts.int_ops - unrolled.counts.int_ops == pytest.approx(2 * 64 / 4)


def test_template_argument_from_launch(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "template <typename T> __global__ void k(T *x) {\n"
        "  x[threadIdx.x] = x[threadIdx.x] * x[threadIdx.x];\n"
        "}\n"
        "int main() { double *x; k<double><<<1, 256>>>(x); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert a.counts.flops["fp64"] == pytest.approx(1.0)
    assert a.counts.flops["fp32"] == 0.0
    # without a launch (none in this folder either), T defaults to float
    alone = tmp_path / "alone"
    alone.mkdir()
    b = count(gpu, alone, src.split("int main")[0], name="t2.cu")
    assert b.counts.flops["fp32"] == pytest.approx(1.0)


def test_per_line_costs_and_weights(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # costs are booked per source line with the line's executions per thread, so another
    # source of per-line instruction mixes (PTX) can replace them
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x) {\n"
        "  float s = 0.f;\n"
        "  for (int j = 0; j < 8; j++) {\n"
        "    s += x[j] * 2.0f;\n"
        "  }\n"
        "  x[threadIdx.x] = s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.weights[4] == pytest.approx(8.0)
    assert a.counts.lines[4][1] == pytest.approx(16.0)  # fp32 on line 4: 8 x FMA
    total = sum(v[1] for v in a.counts.lines.values())
    assert total == pytest.approx(a.counts.flops["fp32"])


def test_openmp_teams_parallel_region(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # SPMD style: teams x threads, each thread one element
    src = (
        "void f(const float *x, float *y) {\n"
        "  #pragma omp target teams num_teams(512) thread_limit(128)\n"
        "  {\n"
        "    #pragma omp parallel\n"
        "    {\n"
        "      int t = omp_get_thread_num();\n"
        "      int g = omp_get_team_num();\n"
        "      int i = g * 128 + t;\n"
        "      y[i] = x[i] * 2.0f + 1.0f;\n"
        "    }\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="spmd.cpp")
    assert a.threads == 512 * 128
    assert a.counts.flops["fp32"] == pytest.approx(2.0)
    x = next(b for b in a.memory.buffers if b.buffer == "x")
    assert x.footprint == pytest.approx(512 * 128 * 4)


def test_openmp_loop_macro(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a loop header hidden in a macro (no semicolon): the region is still the loop
    src = (
        "#define LOOP(i, n) for (int i = 0; i < (n); i++)\n"
        "void f(float *y, int n) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  LOOP(i, 4096) {\n"
        "    y[i] = y[i] + 1.0f;\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="m.cpp")
    assert a.threads == 4096
    assert a.counts.flops["fp32"] == pytest.approx(1.0)
