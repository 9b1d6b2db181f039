"""How long a launch runs, and the DRAM traffic of the display engine during it.

A launch takes the longer of two times:

- **throughput**: its slowest roof, ``max(ops of each precision / peak, DRAM bytes /
  bandwidth)`` over the launch totals (enough threads to keep every unit busy);
- **latency**: its threads' instructions one after another. A warp waits
  ``dependent_cycles`` cycles on average between dependent instructions (ALU results take
  4-6 cycles, L1 hits ~30, L2 hits ~200), so a launch too small to fill the GPU (a few
  hundred threads walking a long loop) runs for ``instructions per thread x dependent_cycles
  / clock`` per wave of resident threads, however few operations it does in all. A thread's
  instructions are its integer ops and half its FLOPs (an FMA is 2 FLOP in one instruction);
  each also holds its warp while its pipe takes the warp's 32 threads, ``32 / lanes`` cycles
  for the SM's lanes of its precision (``peak / (2 x clock x SMs)``): a quarter of a cycle for
  FP32 on an RTX 3080, 16 cycles for FP64 on its 2 lanes an SM.

The time matters to the verdict through the display: a card driving a display (the RTX 3080
of the eval labels, ``GpuProfile.display_frame_bytes``) has its display engine read a frame
from DRAM every refresh, and Nsight Compute counts those bytes in the kernel's DRAM traffic.
A launch spanning ``n`` refreshes is charged ``n`` frames (rounded to the nearest whole one:
a launch shorter than half a refresh most often sees none). That decides kernels that run long
on little data: a few threads spinning for 170 ms read 10 kB themselves but are measured with
200 MB, which puts their intensity below the ridge.

Pure analysis (no LSP).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from roofline_lsp.model.gpus import GpuProfile

__all__ = ["LaunchTime", "display_bytes", "launch_time", "roof_time"]

WARP = 32  # threads a warp instruction issues


@dataclass(frozen=True)
class LaunchTime:
    """A launch's estimated duration and the limit that sets it."""

    seconds: float
    limit: Literal["throughput", "latency"]


def launch_time(
    totals: Mapping[str, float],
    dram_bytes: float,
    gpu_threads: float,
    gpu: GpuProfile,
    *,
    dependent_cycles: float,
    threads_per_sm: int,
) -> LaunchTime:
    """The time of a launch of ``gpu_threads`` threads doing ``totals`` (FLOP by precision,
    ``"int"`` ops; over the launch) and moving ``dram_bytes``."""
    flops = {p: n for p, n in totals.items() if p != "int"}
    int_ops = totals.get("int", 0.0)
    throughput = roof_time(gpu, flops, int_ops, dram_bytes)
    threads = max(gpu_threads, 1.0)
    cycles = int_ops * (dependent_cycles + _issue_cycles(gpu, "int")) if int_ops > 0 else 0.0
    for p, n in flops.items():
        if n > 0:
            cycles += n / 2 * (dependent_cycles + _issue_cycles(gpu, p))
    waves = math.ceil(threads / (gpu.sm_count * threads_per_sm))
    latency = cycles / threads * waves / (gpu.clock_ghz * 1e9)
    if latency > throughput:
        return LaunchTime(latency, "latency")
    return LaunchTime(throughput, "throughput")


def _issue_cycles(gpu: GpuProfile, precision: str) -> float:
    """Cycles a warp's instruction of ``precision`` holds its pipe: 32 threads over the SM's
    lanes of it (a peak counts 2 ops a lane and clock)."""
    lanes = gpu.peak(precision) / (2 * gpu.clock_ghz * 1e9 * gpu.sm_count)
    return WARP / lanes


def roof_time(
    gpu: GpuProfile,
    flops: Mapping[str, float],
    int_ops: float,
    dram_bytes: float,
) -> float:
    """Seconds on the slowest roof of ``gpu`` for ``flops`` (by precision), ``int_ops`` and
    ``dram_bytes``: a launch's, or a thread's (advice weighs fixes with it)."""
    times = [dram_bytes / gpu.dram_bandwidth]
    for p, n in flops.items():
        if n > 0:
            times.append(n / gpu.peak(p))
    if int_ops > 0:
        times.append(int_ops / gpu.peak("int"))
    return max(times)


def display_bytes(gpu: GpuProfile, seconds: float) -> float:
    """DRAM bytes ``gpu``'s display engine reads during ``seconds``: a frame per refresh, to
    the nearest whole number of refreshes (0 for a GPU without a display, or a launch of
    no finite time)."""
    if not gpu.display_frame_bytes or not gpu.display_hz or not math.isfinite(seconds):
        return 0.0
    return gpu.display_frame_bytes * math.floor(seconds * gpu.display_hz + 0.5)
