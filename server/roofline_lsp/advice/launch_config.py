"""Launch-configuration checks (RL010): blocks that are not a whole number of warps or too
small to hide latency, and grids with fewer blocks than the GPU has multiprocessors.
"""

from __future__ import annotations

from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.report import FileReport


def small_launches(report: FileReport, gpu: GpuProfile) -> list[Advice]:
    """RL010 on every launch site of ``report`` whose block or grid (when known) is too small
    for ``gpu``."""
    out: list[Advice] = []
    for site in report.detection.launches:
        block = site.block_value
        if block is None:
            continue
        threads = block[0] * block[1] * block[2]
        start = site.span.start_byte
        end = report.detection.source.find(b"\n", start, site.span.end_byte)
        end = site.span.end_byte if end < 0 else end
        if threads < 64 or threads % 32:
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
                )
            )
            continue
        grid = site.grid_value
        if grid is not None:
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
                    )
                )
    return out
