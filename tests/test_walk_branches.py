"""Counting rules of ``walk_branches.py`` (branch probabilities, sizes inferred from bound
checks) on small sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import LAUNCH, count


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


def test_a_one_bit_test_is_true_for_half_the_threads(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a bitonic step's direction, `(i & k) == 0` with i the global index (1024 blocks of 256)
    # and k = 2048: i & k is 0 or 2048, each for half the threads (it was read as spread
    # over 0..2048: 1 / 2049 of them); a mask of two bits, `(i & 3) == 0`, 1 / 4 (its values
    # do fill 0..3)
    src = (
        "__global__ void k(float *x, int k) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if ((i & k) == 0) x[i] += 1.0f;\n"
        "  if ((i & 3) == 0) x[i] -= 1.0f;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH, values=(("k", 2048.0),))
    assert a.counts.flops["fp32"] == pytest.approx(0.5 + 0.25)


def test_a_branch_on_a_variable_holding_a_test_takes_the_test(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # knn's `int cond1 = (begin + t < w); ... if (cond2 && cond1)`: the flags hold t < 64
    # (64 / 256 of the threads) and t % 2 == 0 (1 / 2): one FP32 add on 64 / 256 x 1 / 2 of
    # them, one on the 1 - 64 / 256 others (`!lo`), one on the 64 / 256 a copy of the flag
    # holds; a flag folded into itself (`all = all && even`) no longer holds the test it was
    # set from: a coin flip (1 / 2), as before
    src = (
        "__global__ void k(float *x) {\n"
        "  int t = threadIdx.x;\n"
        "  int lo = (t < 64);\n"
        "  bool even = t % 2 == 0;\n"
        "  if (lo && even) x[t] += 1.0f;\n"
        "  if (!lo) x[t] += 1.0f;\n"
        "  bool copy = lo;\n"
        "  if (copy) x[t] += 1.0f;\n"
        "  bool all = lo;\n"
        "  all = all && even;\n"
        "  if (all) x[t] += 1.0f;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    assert a.counts.flops["fp32"] == pytest.approx(64 / 256 / 2 + (1 - 64 / 256) + 64 / 256 + 1 / 2)


def test_a_comparison_with_a_shift_is_not_a_template(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # ``t < n >> 2`` reads in the grammar as the template ``t<n>`` compared with 2: it is
    # ``t < (n >> 2)``, 64 / 256 of the threads with n = 256 (one FP32 add each), as the
    # parenthesised form says
    src = (
        "__global__ void k(float *x, int n) {\n"
        "  int t = threadIdx.x;\n"
        "  if (t < n >> 2) x[t] += 1.0f;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, values=(("n", 256.0),), **LAUNCH)
    b = count(
        gpu, tmp_path, src.replace("n >> 2", "(n >> 2)"), "p.cu", values=(("n", 256.0),), **LAUNCH
    )
    assert a.counts.flops["fp32"] == pytest.approx(64 / 256) == b.counts.flops["fp32"]


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


def test_bound_check_on_an_index_the_walk_lost(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a tile's x/y come from the team number modulo an unknown team count: their values are
    # lost, but `x < w && y < h` against unknown sizes is a bounds check every thread of a
    # launch sized to the image passes: one load and one store each (not 0.5 x 0.5 of one)
    a = count(
        gpu,
        tmp_path,
        "#include <omp.h>\n"
        "void t(const unsigned *in, unsigned *out, int w, int h, int tx) {\n"
        "  #pragma omp target teams num_teams(1024) thread_limit(256)\n"
        "  {\n"
        "    #pragma omp parallel\n"
        "    {\n"
        "      unsigned lx = omp_get_thread_num() % 16, ly = omp_get_thread_num() / 16;\n"
        "      unsigned x = (omp_get_team_num() % tx) * 16 + lx;\n"
        "      unsigned y = (omp_get_team_num() / tx) * 16 + ly;\n"
        "      if (x < w && y < h) out[y * w + x] = in[y * w + x];\n"
        "    }\n"
        "  }\n"
        "}\n",
        name="t.cpp",
        **LAUNCH,
    )
    kinds = {(x.buffer, x.kind): x.weight for x in a.counts.accesses}
    assert kinds == {("in", "load"): pytest.approx(1.0), ("out", "store"): pytest.approx(1.0)}


def test_bound_check_against_an_expression_of_an_unknown_size(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # minimod's `if (i > x4 - 1 || j > y4 - 1) return;`: the index is known (x3 = 0 plus the
    # thread's), the bound an unknown kernel parameter minus one: a bounds check the launch
    # is sized to, so every thread goes on to its one FMA (2 FP32 FLOP), not 1 / 4 of them
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *v, long x4, long y4, int w) {\n"
        "  long i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  long j = blockIdx.y;\n"
        "  if (i > x4 - 1 || j > y4 - 1) { return; }\n"
        "  v[j * w + i] = v[j * w + i] * 2.0f + 1.0f;\n"
        "}\n",
        block=(256, 1, 1),
        grid=(1024, 4, 1),
    )
    assert a.counts.flops["fp32"] == pytest.approx(2.0)


def test_the_last_block_done_idiom_runs_in_one_block(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a ticket taken from an atomic counter, compared with gridDim.x - 1 (through shared
    # memory): only the last of the 1024 blocks sums the 1024 partial results, so its
    # 1024-trip loop (1 FADD each) counts 1024 / 1024 = 1 FP32 FLOP per thread, plus the
    # partial sum's FADD (before: the data-dependent branch was taken half the time, 512)
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *x, float *partial, unsigned int *count, float *out) {\n"
        "  __shared__ unsigned int ticket;\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (threadIdx.x == 0) partial[blockIdx.x] = x[i] + 1.0f;\n"
        "  __threadfence();\n"
        "  if (threadIdx.x == 0) ticket = atomicAdd(count, 1);\n"
        "  __syncthreads();\n"
        "  if (ticket == gridDim.x - 1) {\n"
        "    float s = 0.f;\n"
        "    for (int b = 0; b < gridDim.x; b++) s += partial[b];\n"
        "    out[threadIdx.x] = s;\n"
        "  }\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(1 / 256 + 1.0)


def test_a_size_read_from_memory_is_inferred_from_the_bound_check(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # n = params->n is the same for every thread; `if (i >= n) return` says the launch
    # covers it, so n is about 1024 x 256 = 262,144 and the j loop runs that many trips
    # (1 DADD each; before: "bound read from memory", 16 trips)
    a = count(
        gpu,
        tmp_path,
        "struct param { int n; double h; };\n"
        "__global__ void k(double *x, const param *params) {\n"
        "  int n = params->n;\n"
        "  int i = blockDim.x * blockIdx.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  double s = 0.0;\n"
        "  for (int j = 0; j < n; j++) s += x[j];\n"
        "  x[i] = s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp64"] == pytest.approx(1024 * 256, rel=1e-3)


def test_a_macro_in_a_condition_is_weighed_as_the_test_it_expands_to(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # IN_RANGE(t, 1, 62) is ``t >= 1 && t <= 62``, weighed as the written-out test is: the
    # two sides as independent, 255/256 x 63/256 of the threads run the FP32 add (a call
    # would be a coin flip: 0.5)
    src = (
        "#define IN_RANGE(x, lo, hi) ((x) >= (lo) && (x) <= (hi))\n"
        "__global__ void k(float *x) {\n"
        "  int t = threadIdx.x;\n"
        "  if (IN_RANGE(t, 1, 62)) x[t] += 1.0f;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    b = count(
        gpu, tmp_path, src.replace("IN_RANGE(t, 1, 62)", "t >= 1 && t <= 62"), "b.cu", **LAUNCH
    )
    assert a.counts.flops["fp32"] == pytest.approx(255 / 256 * 63 / 256) == b.counts.flops["fp32"]


def test_a_condition_macro_that_names_itself_is_expanded_once(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the preprocessor does not expand ``LOOP`` inside its own expansion: the inner call is
    # a call (an unknown test, 1/2), the outer ``t < 128`` 1/2: a quarter of the threads
    a = count(
        gpu,
        tmp_path,
        "#define LOOP(x) ((x) < 128 && LOOP(x))\n"
        "__global__ void k(float *y) {\n"
        "  int t = threadIdx.x;\n"
        "  if (LOOP(t)) y[t] += 1.0f;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(0.25)


def test_a_bound_chosen_per_block_is_the_one_most_blocks_take(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # hotspot's valid range of a 16 x 16 block: the first block of a row starts at 1, the last
    # stops at 14, the other 62 of 64 take 0 to 15, so `tx` in [vmin, vmax] holds for every
    # thread of most blocks (before: each side of the test unknown, 1/2 x 1/2). With the
    # pyramid step's own range, tx and ty in [1, 14], each side weighed apart (15/16 of the
    # threads each, as IN_RANGE's test is written): (15/16)^4 of the threads run one FMA
    # (2 FLOP), 1.54 FLOP a thread (before: 0.1)
    a = count(
        gpu,
        tmp_path,
        "#define IN_RANGE(x, min, max) ((x) >= (min) && (x) <= (max))\n"
        "__global__ void k(float *a) {\n"
        "  int tx = threadIdx.x, ty = threadIdx.y, bx = blockIdx.x;\n"
        "  int vmin = (bx == 0) ? 1 : 0;\n"
        "  int vmax = (bx == gridDim.x - 1) ? 14 : 15;\n"
        "  float s = a[0];\n"
        "  if (IN_RANGE(tx, 1, 14) && IN_RANGE(ty, 1, 14) && IN_RANGE(tx, vmin, vmax) &&\n"
        "      IN_RANGE(ty, vmin, vmax))\n"
        "    s = s * 0.5f + 1.0f;\n"
        "  a[tx] = s;\n"
        "}\n"
        "int main() { float *a; k<<<dim3(64, 64), dim3(16, 16)>>>(a); }\n",
    )
    assert a.counts.flops["fp32"] == pytest.approx(2 * (15 / 16) ** 4)
