"""Loops whose bounds differ per thread through clamps and selects
(``estimate/sampled_trips.py``), counted through the walker on small kernels."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import count, loop_trips


def _trips(gpu, tmp_path: Path, src: str, **launch) -> dict[str | None, tuple[float, str]]:  # type: ignore[no-untyped-def]
    return loop_trips(count(gpu, tmp_path, src, **launch))


def test_a_window_clipped_at_the_edges_runs_its_mean_length(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 1024 threads, i = 0..1023, window k in [max(0, i - 8), min(1024, i + 9)): 17 trips
    # inside, 9..16 at each edge (8 threads each, 100 trips per edge):
    # (1008 * 17 + 2 * 100) / 1024 = 16.93 trips per thread
    src = (
        "__global__ void box(const float *in, float *out, int n, int R) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  float s = 0.f;\n"
        "  for (int k = max(0, i - R); k < min(n, i + R + 1); k++) s += in[k];\n"
        "  out[i] = s;\n"
        "}\n"
        "int main() { float *a, *b; box<<<4, 256>>>(a, b, 1024, 8); }\n"
    )
    n, source = _trips(gpu, tmp_path, src)["k"]
    assert source == "mean over the threads"
    assert n == pytest.approx(17336 / 1024, rel=0.02)


def test_col2im_start_and_end_of_the_covering_columns(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 4096 threads over a 64 x 64 image through a grid-stride index (one pass each):
    # w = index % 64; columns j from (w < 3 ? 0 : w - 2) to min(w + 1, 62): w = 0, 1, 2
    # cover 1, 2, 3; w = 3..61 cover 3 (59 of them); w = 62, 63 cover 2, 1:
    # (6 + 177 + 3) / 64 = 2.906 trips per thread. A loop from a value read from memory
    # (t) keeps the default.
    src = (
        "__global__ void col2im(const float *col, float *img, const int *off, int n) {\n"
        "  for (int index = blockIdx.x * blockDim.x + threadIdx.x; index < n;\n"
        "       index += blockDim.x * gridDim.x) {\n"
        "    const int w = index % 64;\n"
        "    const int start = (w < 3) ? 0 : w - 2;\n"
        "    const int end = min(w + 1, 62);\n"
        "    float v = 0.f;\n"
        "    for (int j = start; j < end; j++) v += col[j * 64 + w];\n"
        "    for (int t = off[index]; t < end; t++) v += col[t];\n"
        "    img[index] = v;\n"
        "  }\n"
        "}\n"
        "int main() { float *c, *i; int *o; col2im<<<16, 256>>>(c, i, o, 4096); }\n"
    )
    trips = _trips(gpu, tmp_path, src)
    assert trips["j"][1] == "mean over the threads"
    assert trips["j"][0] == pytest.approx(186 / 64, rel=0.05)
    assert trips["t"][1] == "default"


def test_a_bound_no_thread_can_know_keeps_the_default(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # m is a parameter no launch gives: the clamp of an unknown is unknown. A bound from the
    # counter of a halving loop (s = 128, 64, ..., 1) is not drawn evenly from [1, 128]
    src = (
        "__global__ void k(const float *in, float *out, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  for (int k = max(0, i - 4); k < min(m, i + 5); k++) s += in[k];\n"
        "  for (int h = 128; h > 0; h >>= 1)\n"
        "    for (int j = max(0, i - h); j < i; j++) s += in[j];\n"
        "  out[i] = s;\n"
        "}\n"
    )
    trips = _trips(gpu, tmp_path, src, block=(256, 1, 1), grid=(4, 1, 1))
    assert trips["k"][1] == "default"
    assert trips["j"][1] == "default"
