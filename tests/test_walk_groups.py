"""Cooperative groups in the counter (``walk_groups.py``): group sizes and ranks as loop
bounds, on a hand-written fixture and small sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import buffer_of, count

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.roofline import Inputs, analyze

FIX = Path(__file__).parent / "fixtures" / "estimator" / "coop_groups.cu"


def test_group_sizes_bound_loops(gpu) -> None:  # type: ignore[no-untyped-def]
    det = detect(FIX.read_bytes(), str(FIX))
    (k,) = det.kernels
    a = analyze(k, det, gpu, Inputs(block=(256, 1, 1), grid=(1, 1, 1)))
    trips = {(lp.line, lp.var): (lp.trips, lp.source) for lp in a.counts.loops}
    # line 19: i from block.thread_rank() by block.size() = 256 up to n = 65536:
    #   65536 / 256 = 256 per thread (+ the half trip of a thread-strided loop's mean)
    assert trips[(19, "i")] == (pytest.approx(256.0, abs=0.01), "grid-stride")
    # line 21: o = warp.size() / 2 = 16, halved while > 0: 16, 8, 4, 2, 1 -> 5 trips; a
    #   tile's size is a template argument: a compile-time constant, unrolled
    assert trips[(21, "o")] == (5.0, "constant")
    # line 23: j < tile.size() of tiled_partition<16>: 16 trips
    assert trips[(23, "j")] == (16.0, "constant")
    # line 8 (tile_sum, inlined): t.size() / 2 = 8 for a thread_block_tile<16> parameter:
    #   8, 4, 2, 1 -> 4 trips
    assert trips[(8, "o")] == (4.0, "constant")
    # line 26: k < this_thread_block().size() = 256 by 64: 4 trips, known from the launch
    assert trips[(26, "k")] == (4.0, "launch")
    assert not [lp for lp in a.counts.loops if lp.source == "default"]


def test_a_tile_loop_counts_its_flops(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "#include <cooperative_groups.h>\n"
        "namespace cg = cooperative_groups;\n"
        "__global__ void k(float *x) {\n"
        "  auto tile = cg::tiled_partition<8>(cg::this_thread_block());\n"
        "  float s = x[threadIdx.x];\n"
        "  for (int j = 0; j < tile.size(); j++) s = s * 1.5f + 1.0f;\n"
        "  x[threadIdx.x] = s;\n"
        "}\n"
        "int main() { float *x; int size = 1 << 20; k<<<1, 64>>>(x); }\n"
    )
    a = count(gpu, tmp_path, src, block=(64, 1, 1), grid=(1, 1, 1))
    # 8 trips (the tile's size) x one FMUL + one FADD = 16 FP32 FLOP; with the unknown-bound
    # default it was 16 trips, 32 FLOP. main's `size` is not the member `size()` (before,
    # the bound could be taken for that run-time value: the names were read from a set, in
    # an order that changed with the interpreter's hash seed)
    (lp,) = a.counts.loops
    assert (lp.trips, lp.source) == (8.0, "constant")
    assert a.counts.flops["fp32"] == pytest.approx(16.0)


def test_a_tile_strided_loop(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "#include <cooperative_groups.h>\n"
        "using namespace cooperative_groups;\n"
        "__global__ void k(const float *x, float *y, int n) {\n"
        "  thread_block_tile<32> warp = tiled_partition<32>(this_thread_block());\n"
        "  float s = 0.f;\n"
        "  for (int i = warp.thread_rank(); i < n; i += warp.size()) s += x[i];\n"
        "  if (warp.thread_rank() == 0) y[blockIdx.x] = s;\n"
        "}\n"
        "int main() { float *x, *y; k<<<4, 32>>>(x, y, 1024); }\n"
    )
    a = count(gpu, tmp_path, src, block=(32, 1, 1), grid=(4, 1, 1), values=(("n", 1024.0),))
    # each lane of the warp strides by 32 over 1024 elements: 32 trips. The walker takes the
    # mean start (rank 0..31: 15.5) and adds half a trip for a thread-strided loop:
    # (1024 - 15.5) / 32 + 0.5 = 32.016 trips, one FADD each (default: 16 trips)
    (lp,) = a.counts.loops
    assert (lp.trips, lp.source) == (pytest.approx(32.016, abs=1e-3), "grid-stride")
    assert a.counts.flops["fp32"] == pytest.approx(32.016, abs=1e-3)


def test_rows_indexed_by_the_tile_index(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "#include <cooperative_groups.h>\n"
        "namespace cg = cooperative_groups;\n"
        "__global__ void k(const float *in, float *out, int C) {\n"
        "  auto warp = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "  int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();\n"
        "  const float *x = in + row * C;\n"
        "  float s = 0.f;\n"
        "  for (int i = warp.thread_rank(); i < C; i += warp.size()) s += x[i];\n"
        "  if (warp.thread_rank() == 0) out[row] = s;\n"
        "}\n"
        "int main() { float *a, *b; k<<<64, 128>>>(a, b, 1024); }\n"
    )
    a = count(gpu, tmp_path, src, block=(128, 1, 1), grid=(64, 1, 1))
    # 4 warps per block of 128, 64 blocks: 256 rows of C = 1024 floats, each row read by
    # its warp once (1024 / 32 = 32 loads per thread): 256 x 1024 distinct elements of in;
    # an unknown tile index left the footprint unknown
    (load,) = [x for x in a.counts.accesses if x.buffer == "in"]
    assert load.weight == pytest.approx(32.0, abs=0.6)
    assert load.distinct == pytest.approx(256 * 1024, rel=0.01)


def test_a_group_s_coordinates_are_the_built_ins(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "#include <cooperative_groups.h>\n"
        "namespace cg = cooperative_groups;\n"
        "__global__ void sum(const int *in, int *out, int n) {\n"
        "  cg::thread_block block = cg::this_thread_block();\n"
        "  int v = 0;\n"
        "  for (int i = block.group_index().x * block.size() + block.thread_rank(); i < n;\n"
        "       i += block.size() * gridDim.x)\n"
        "    v += in[i];\n"
        "  out[block.group_index().x * block.dim_threads().x + block.thread_index().x] = v;\n"
        "}\n"
        "int main() { int *in, *out; sum<<<1024, 256>>>(in, out, 1 << 26); }\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(1024, 1, 1))
    # block.group_index().x is blockIdx.x: a grid-stride loop over 2^26 elements by the
    # 262,144 threads, 256 trips a thread; read once, 256 MiB (it was a value read from
    # memory: 16 trips by default, and a 16 kB working set)
    (lp,) = a.counts.loops
    assert (lp.trips, lp.source) == (pytest.approx(256.0), "grid-stride")
    reads = buffer_of(a, "in")
    assert reads.footprint == pytest.approx(4 * 2**26)
    # the store's index is the thread's global index: one element each, 1 MiB
    writes = buffer_of(a, "out")
    assert writes.footprint == pytest.approx(4 * 1024 * 256)
