"""Counting a small kernel for the walker tests: ``count(gpu, tmp_path, src, **launch)``
writes ``src`` to a file, detects its first kernel and estimates it on ``gpu``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.kernel_estimate import KernelEstimate
from roofline_lsp.estimate.roofline import Inputs, analyze
from roofline_lsp.model.gpus import GpuProfile

LAUNCH: dict[str, Any] = dict(block=(256, 1, 1), grid=(1024, 1, 1))


def count(
    gpu: GpuProfile, tmp_path: Path, src: str, name: str = "k.cu", **inputs: Any
) -> KernelEstimate:
    path = tmp_path / name
    path.write_text(src)
    det = detect(path.read_bytes(), str(path))
    assert det.kernels, "no kernel detected"
    return analyze(det.kernels[0], det, gpu, Inputs(**inputs))
