"""Launch-configuration checks (RL010): blocks that are not a whole number of warps or too
small to hide latency, and grids with fewer blocks than the GPU has multiprocessors.
"""

from __future__ import annotations

import math
import re

from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.advice.impact import Gain
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.report import FileReport


def small_launches(report: FileReport, gpu: GpuProfile) -> list[Advice]:
    """RL010 on every launch site of ``report`` whose block or grid (when known) is too small
    for ``gpu``. A launch with a constant grid (``<<<1, 256>>>``, the single-block second
    pass of a reduction, a tiny fixed-size job) is deliberate; a small grid is advice only
    for a kernel that strides over its data by the grid (``gridDim``), whose work does not
    shrink with the grid."""
    out: list[Advice] = []
    grid_stride = {
        k.name
        for k in report.detection.kernels
        if b"gridDim" in report.detection.source[k.body_span.start_byte : k.body_span.end_byte]
    }
    for site in report.detection.launches:
        block = site.block_value
        fixed_grid = re.fullmatch(r"\s*\d+\s*", site.grid) is not None
        if block is None or (fixed_grid and site.kernel not in grid_stride):
            continue
        threads = block[0] * block[1] * block[2]
        if threads <= 0:
            continue  # `<<<n, 0>>>` is an invalid launch, not a small one
        start = site.span.start_byte
        end = report.detection.source.find(b"\n", start, site.span.end_byte)
        end = site.span.end_byte if end < 0 else end
        if (threads < 64 or threads % 32) and not fixed_grid:
            lanes = math.ceil(threads / 32) * 32 / threads
            # at most 32 blocks per SM: fewer than 64 threads cap the warps it holds
            occupancy = 64 / threads if threads < 64 else 1.0
            gain = Gain(round(max(lanes, occupancy), 2), None, gpu.name)
            why = (
                f"{threads} threads per block"
                + (
                    " is not a multiple of the 32-thread warp, so lanes idle"
                    if threads % 32
                    else ""
                )
                + (
                    f"; with so few threads per block an {gpu.unit_name} cannot hold enough warps "
                    "to hide memory latency"
                    if threads < 64
                    else ""
                )
            )
            out.append(
                Advice(
                    "RL010",
                    site.kernel,
                    start,
                    end,
                    f"launch of `{site.kernel}`: {why}. Use 128-256 threads per block.",
                    "hint" if gain.small else "information",
                    gain=gain,
                )
            )
            continue
        grid = site.grid_value
        if grid is not None and site.kernel in grid_stride:
            blocks = grid[0] * grid[1] * grid[2]
            if blocks < gpu.sm_count:
                out.append(
                    Advice(
                        "RL010",
                        site.kernel,
                        start,
                        end,
                        f"launch of `{site.kernel}`: {blocks} block(s) for the {gpu.sm_count} "
                        f"{gpu.unit_name}s of {gpu.name}, so most of the GPU idles and neither "
                        "its compute nor its bandwidth roof can be reached. Give it at least "
                        f"{gpu.sm_count * 2} blocks (split the work further).",
                        gain=Gain(round(gpu.sm_count / max(blocks, 1), 2), None, gpu.name),
                    )
                )
    return out
