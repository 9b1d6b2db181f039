"""Counting a small kernel for the walker tests: ``count(gpu, tmp_path, src, **launch)``
writes ``src`` to a file, detects its first kernel and estimates it on ``gpu``;
``detected(tmp_path, src, name)`` is the file's detection (all its kernels);
``loop_trips(estimate)`` its loops' trips and where they came from, by loop variable;
``buffer_of(estimate, name)`` the traffic of one buffer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.kernel_estimate import KernelEstimate
from roofline_lsp.estimate.memory import BufferTraffic
from roofline_lsp.estimate.roofline import Inputs, analyze
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.kernel import Detection

LAUNCH: dict[str, Any] = dict(block=(256, 1, 1), grid=(1024, 1, 1))


def detected(tmp_path: Path, src: str, name: str = "k.cu") -> Detection:
    path = tmp_path / name
    path.write_text(src)
    return detect(path.read_bytes(), str(path))


def count(
    gpu: GpuProfile, tmp_path: Path, src: str, name: str = "k.cu", **inputs: Any
) -> KernelEstimate:
    det = detected(tmp_path, src, name)
    assert det.kernels, "no kernel detected"
    return analyze(det.kernels[0], det, gpu, Inputs(**inputs))


def loop_trips(a: KernelEstimate) -> dict[str | None, tuple[float, str]]:
    """Each loop's (trips, source) by its variable (None: a loop without one)."""
    return {lp.var: (lp.trips, lp.source) for lp in a.counts.loops}


def buffer_of(a: KernelEstimate, name: str) -> BufferTraffic:
    """The traffic of buffer ``name`` in ``a`` (there is exactly one)."""
    (b,) = (b for b in a.memory.buffers if b.buffer == name)
    return b
