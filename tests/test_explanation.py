"""What a static verdict rests on (``estimate/explanation.py``): its terms as data, and its
confidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.explanation import static_confidence, verdict_terms
from roofline_lsp.estimate.roofline import Inputs, analyze, estimate
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.terms import LoopTerm, MemoryTerm, WorkTerm
from roofline_lsp.model.verdict import classify_bound

SAXPY = (
    "__global__ void k(int n, float a, float *x, float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
)


@pytest.fixture(scope="module")
def gpu():  # type: ignore[no-untyped-def]
    return load_registry().get("rtx3080")


def test_verdict_rests_on_terms_built_from_the_estimate(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "k.cu"
    path.write_text(SAXPY)
    det = detect(path.read_bytes(), str(path))
    inputs = Inputs(block=(256, 1, 1), grid=(4096, 1, 1), values=(("n", 1048576.0),))
    a = analyze(det.kernels[0], det, gpu, inputs)
    ridge = gpu.ridges()
    ai = {p: (None if v is None else min(v, 1e9)) for p, v in a.ai.items()}
    _, deciding = classify_bound(ai, ridge)
    terms = verdict_terms(a)
    work, memory = terms[0], terms[-1]
    # y[i] = a * x[i] + y[i]: one FMA (2 FP32 FLOP) per thread; 3 x 4 B referenced per thread
    assert isinstance(work, WorkTerm) and work.per == "thread"
    assert dict(work.flops) == {"fp32": 2.0}
    assert isinstance(memory, MemoryTerm)
    assert memory.references == pytest.approx(12 * 1048576, rel=0.01)
    v = estimate(det.kernels[0], det, gpu, inputs)
    assert v.terms == terms and v.rationale == ""
    assert v.confidence == static_confidence(a, ai, ridge, deciding)
    assert 0.05 <= v.confidence <= 0.95


def test_a_loop_term_carries_its_line_and_work_per_iteration(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "__global__ void k(int n, const float *x, float *y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.0f;\n"
        "  for (int j = 0; j < 64; j++)\n"
        "    s += x[j] * x[j];\n"
        "  y[i] = s;\n"
        "}\n"
    )
    path = tmp_path / "k.cu"
    path.write_text(src)
    det = detect(path.read_bytes(), str(path))
    v = estimate(det.kernels[0], det, gpu, Inputs(block=(256, 1, 1), grid=(64, 1, 1)))
    (loop,) = [t for t in v.terms if isinstance(t, LoopTerm)]
    # line 4, 64 constant trips; per iteration one FMA (2 FP32 FLOP) and one 4 B load
    assert (loop.var, loop.line, loop.trips, loop.trip_source) == ("j", 4, 64, "constant")
    assert loop.per_iteration is not None
    flops, _int_ops, refs = loop.per_iteration
    assert dict(flops) == {"fp32": pytest.approx(2.0)}
    assert refs == pytest.approx(4.0)
