"""``roofline-lsp gpus``: the GPU profiles and their ridge points, as a table that fits 100
columns (aliases listed under it) or as JSON."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import TextIO

from roofline_lsp.cli.arguments import EXIT_OK, UsageError
from roofline_lsp.model.gpus import (
    MIB,
    GpuProfileError,
    GpuRegistry,
    gpu_json,
    load_registry,
)
from roofline_lsp.model.numbers import fmt_fixed
from roofline_lsp.model.verdict import PRECISIONS

WIDTH = 100


def cmd_gpus(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        registry = load_registry(ns.gpu_profiles)
    except GpuProfileError as e:
        raise UsageError(str(e)) from None
    if ns.json:
        out.write(json.dumps([gpu_json(g) for g in registry.all()], indent=2) + "\n")
    else:
        out.write(gpu_table(registry) + "\n")
    return EXIT_OK


def gpu_table(registry: GpuRegistry) -> str:
    """One aligned row per GPU: peaks, DRAM bandwidth, cache, ridge points; then the
    aliases each name also answers to, wrapped to :data:`WIDTH` columns."""
    headers = ("GPU", "FP64", "FP32", "FP16", "INT32", "DRAM", "L2/LLC", *PRECISIONS)
    units = ("", "TFLOP/s", "TFLOP/s", "TFLOP/s", "TOP/s", "GB/s", "MiB") + ("op/B",) * 4
    rows: list[tuple[str, ...]] = []
    for p in registry.all():
        r = p.ridges()
        rows.append(
            (
                p.name,
                fmt_fixed(p.fp64_flops / 1e12),
                fmt_fixed(p.fp32_flops / 1e12),
                fmt_fixed(p.fp16_flops / 1e12),
                fmt_fixed(p.int32_ops / 1e12),
                fmt_fixed(p.dram_bandwidth / 1e9),
                fmt_fixed(p.l2_bytes / MIB),
                *(fmt_fixed(r[k]) for k in PRECISIONS),
            )
        )
    table = [headers, units, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    lines = [
        " ".join(
            c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)
        ).rstrip()
        for row in table
    ]
    ridge_col = sum(widths[:7]) + 7
    lines.insert(0, " " * ridge_col + "ridge points (ops per DRAM byte)")
    lines.append("")
    lines.append("Aliases:")
    for p in registry.all():
        if p.aliases:
            lines.extend(
                textwrap.wrap(
                    f"{p.name}: {', '.join(p.aliases)}",
                    WIDTH,
                    initial_indent="  ",
                    subsequent_indent="    ",
                )
            )
    lines.append("")
    lines.extend(
        textwrap.wrap(
            "Peaks: vector (non-tensor), dense, FMA = 2 ops; INT32 = lanes x 2 x clock. "
            "Ridge = peak / DRAM bandwidth. Tensor/matrix peaks and the source of every "
            "number: roofline-lsp gpus --json",
            WIDTH,
        )
    )
    return "\n".join(lines)
