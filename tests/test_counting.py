"""Counting rules of ``counting.py`` (the complete walker and its per-thread result) on
small sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import LAUNCH, count


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


def test_a_math_function_of_constants_is_folded(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # ``#define PI acos(-1.0)`` costs nothing (nvcc computes it; its PTX has no acos): the
    # kernel counts as with the literal, one FP64 multiply and one division by length;
    # sin(x) of a value known only at run time keeps its cost
    body = (
        "__global__ void k(double *u, double length) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  u[i] = PI * u[i] / length;\n"
        "}\n"
    )
    folded = count(gpu, tmp_path, "#define PI acos(-1.0)\n" + body, name="a.cu")
    literal = count(gpu, tmp_path, "#define PI 3.141592653589793\n" + body, name="b.cu")
    assert folded.counts.flops["fp64"] == pytest.approx(literal.counts.flops["fp64"])
    kept = count(gpu, tmp_path, "#define PI acos(u[0])\n" + body, name="c.cu")
    assert kept.counts.flops["fp64"] > literal.counts.flops["fp64"] + 10


def test_integer_arithmetic_on_kernel_parameters_is_computed_once(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # ``ni`` expands to ``(ilast - ifirst + 1)`` at each of its three uses on line 6; the
    # same for every thread and loop trip, it is computed once (IADD3: 1). Line 6 then
    # costs ni 1 + ``i * ni`` 1 + ``i * ni + ni`` 1 (an IMAD: the product is not reused,
    # it has a thread-dependent operand) + 3 address computations (a twice, b) = 6
    # integer ops; counted at every use it was 8
    a = count(
        gpu,
        tmp_path,
        "#define ni (ilast - ifirst + 1)\n"
        "__global__ void k(const float *a, float *b, int ifirst, int ilast, int n)\n"
        "{\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n)\n"
        "    b[i] = a[i * ni] + a[i * ni + ni];\n"
        "}\n"
        "int main(int argc, char **argv)\n"
        "{\n"
        "  k<<<4, 256>>>(0, 0, atoi(argv[1]), atoi(argv[2]), 1024);\n"
        "}\n",
    )
    assert a.counts.lines[6][3] == pytest.approx(6.0)
