"""``roofline-lsp export-finetune``: chat fine-tuning JSONL from a labelled folder."""

from __future__ import annotations

import argparse
from typing import TextIO

from roofline_lsp.cli.arguments import EXIT_OK, UsageError
from roofline_lsp.llm.finetune import export_finetune
from roofline_lsp.model.gpus import GpuProfileError, UnknownGpuError, load_registry


def cmd_export_finetune(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        gpu = load_registry(ns.gpu_profiles).get(ns.gpu)
    except (UnknownGpuError, GpuProfileError) as e:
        raise UsageError(str(e)) from None
    try:
        stats = export_finetune(ns.dataset, ns.out, gpu)
    except (OSError, ValueError) as e:
        raise UsageError(f"export-finetune: {e}") from None
    err.write(f"{stats}\n")
    return EXIT_OK
