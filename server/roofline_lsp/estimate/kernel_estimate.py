"""The result of estimating one kernel: everything behind its verdict (the counts per
thread, the launch's DRAM traffic and totals, the arithmetic intensities)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from roofline_lsp.detect.bindings import HostContext
from roofline_lsp.estimate.launch_time import LaunchTime
from roofline_lsp.estimate.memory import MemoryEstimate
from roofline_lsp.estimate.thread_counts import ThreadCounts


@dataclass(frozen=True)
class KernelEstimate:
    """Everything behind a verdict (the counts per thread and the launch totals)."""

    counts: ThreadCounts
    memory: MemoryEstimate
    threads: float
    gpu_threads: float
    totals: dict[str, float]  # fp64, fp32, fp16, int over the launch
    ai: dict[str, float | None]
    context: HostContext = field(repr=False)
    launch_from: Literal["given", "source", "guard", "assumed"] = "source"  # see Counts
    # template type parameters nothing fixed, taken as float
    assumed_types: tuple[str, ...] = ()
    # types no declaration in view defines, taken by their name (``dfloat``: float)
    named_types: tuple[tuple[str, str], ...] = ()
    time: LaunchTime | None = None  # how long the launch runs (``launch_time``)
