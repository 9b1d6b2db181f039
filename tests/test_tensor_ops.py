"""Tensor-core multiply-adds in source (``estimate/tensor_ops.py``) and the verdict they get:
the tile shape and operand type of ``wmma::fragment`` declarations, the FLOPs of one
``mma_sync`` per thread, and a WMMA GEMM weighed against the tensor-core peak."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import buffer_of

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.roofline import analyze, estimate
from roofline_lsp.estimate.tensor_ops import (
    Fragment,
    elements_per_thread,
    fragment_type,
    fragments,
    mma_flops,
    operand_kind,
    operand_name,
)
from roofline_lsp.model.gpus import GpuProfile, load_registry

FIXTURES = Path(__file__).parent / "fixtures" / "estimator"


def _number(text: str) -> float | None:
    return {"WM": 16.0, "WN": 16.0, "WK": 8.0}.get(text) or (
        float(text) if text.isdigit() else None
    )


def test_fragments_declared_by_type_in_lists_arrays_and_auto() -> None:
    src = (
        "wmma::fragment<wmma::matrix_a, WM, WN, WK, wmma::precision::tf32, wmma::row_major> a;\n"
        "wmma::fragment<wmma::accumulator, 16, 16, 16, float> c[2][4], d;\n"
        "auto b = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major>();\n"
    )
    found = fragments(src)
    assert found["a"] == Fragment("matrix_a", "WM", "WN", "WK", "wmma::precision::tf32")
    assert found["c"] == found["d"] == Fragment("accumulator", "16", "16", "16", "float")
    assert found["b"].use == "matrix_b" and found["b"].element == "__half"
    frag = fragment_type("wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major>")
    assert frag is not None and frag.use == "matrix_a"
    assert fragment_type("float4") is None


def test_operand_types_and_names() -> None:
    assert operand_kind("wmma::precision::tf32") == "tf32"
    assert operand_kind("__nv_bfloat16") == "bf16"
    assert operand_kind("half") == "f16"
    assert operand_kind("double") == "f64"
    assert operand_kind("signed char") == "s8"
    assert operand_kind("unsigned char") == "u8"
    assert operand_name("a_frag[i]") == "a_frag"
    assert operand_name("&acc") == "acc"


def test_a_thread_s_share_of_a_warp_s_tile() -> None:
    # m16n16k8 tf32: an A tile of 16 x 8 and a B tile of 8 x 16 hold 4 elements a thread,
    # the 16 x 16 accumulator 8; one multiply-add is 2 x 16 x 16 x 8 / 32 = 128 FLOP a thread
    a = Fragment("matrix_a", "WM", "WN", "WK", "precision::tf32")
    b = Fragment("matrix_b", "WM", "WN", "WK", "precision::tf32")
    acc = Fragment("accumulator", "WM", "WN", "WK", "float")
    assert elements_per_thread(a, _number) == 4
    assert elements_per_thread(b, _number) == 4
    assert elements_per_thread(acc, _number) == 8
    assert mma_flops(a, {"a": a, "acc": acc}, _number) == (128.0, "tf32")
    # an unknown shape counts nothing rather than a guess
    assert mma_flops(Fragment("matrix_a", "M", "N", "K", "half"), {}, _number) is None
    assert mma_flops(None, {}, _number) is None


def test_tensor_peaks_by_operand_type() -> None:
    reg = load_registry()
    a100, rtx = reg.get("a100-sxm4-40gb"), reg.get("rtx3080")
    assert a100.tensor_peak("f16") == pytest.approx(312e12)
    assert a100.tensor_peak("tf32") == pytest.approx(156e12)  # the datasheet's TF32 rate
    assert a100.tensor_peak("s8") == pytest.approx(624e12)  # ... and its INT8 rate
    assert a100.tensor_peak("f64") == pytest.approx(19.5e12)
    assert rtx.tensor_peak("f64") is None  # GA102 tensor cores have no FP64 mode


@pytest.mark.parametrize(
    "profile",
    [g for g in load_registry().all() if g.tensor_peak("tf32")],
    ids=lambda g: g.name,
)
def test_a_wmma_tf32_gemm_is_compute_bound_on_every_gpu_with_tensor_cores(
    profile: GpuProfile,
) -> None:
    # 4096^2 / 16^2 = 65536 warps in 1024 x 64 blocks of 512 threads: 2^21 threads, one
    # warp per 16 x 16 tile of C. Each runs 4096 / 8 = 512 multiply-adds of 16 x 16 x 8, 128
    # FLOP a thread each: 65536 tensor-core FLOP a thread, 2 x 4096^3 = 137.4 GFLOP in all.
    # The fragments' tf32 conversions run over num_elements = 16 x 8 / 32 = 4 registers, no
    # memory. Each tile load moves a lane's share (4 x 4 B) from a pointer that tells the
    # 65536 warps' rows (a) or columns (b) apart: each matrix's 64 MiB is its footprint, as
    # is C's, stored once (8 x 4 B a lane); the re-reads (16 GiB of each of a and b) come
    # from L2, but for the capacity misses of buffers larger than L2 (2% of them)
    path = FIXTURES / "wmma_tf32_4096.cu"
    det = detect(path.read_bytes(), str(path))
    a = analyze(det.kernels[0], det, profile)
    assert a.threads == 2**21
    assert a.counts.flops["tensor"] == pytest.approx(65536)
    assert a.totals["tensor"] == pytest.approx(2 * 4096**3)
    assert a.counts.tensor_kind == "tf32"
    assert not a.memory.local_bytes  # fragment elements are registers
    for name in ("a", "b", "c"):
        assert buffer_of(a, name).footprint == pytest.approx(64 * 2**20)
    assert buffer_of(a, "a").references == pytest.approx(2**21 * 512 * 16)
    assert buffer_of(a, "c").stored == pytest.approx(64 * 2**20)
    v = estimate(det.kernels[0], det, profile)
    assert v.bound == "compute"
    assert v.ai["tensor"] is not None and v.ai["tensor"] > v.ridge["tensor"]
    assert v.ridge["tensor"] == pytest.approx(
        profile.tensor_peak("tf32") / profile.dram_bandwidth  # type: ignore[operator]
    )
