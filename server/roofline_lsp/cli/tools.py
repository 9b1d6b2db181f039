"""The small commands: ``gpus`` (the GPU profiles), ``serve`` (the language server) and
``export-finetune`` (chat fine-tuning JSONL from a labelled folder)."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from roofline_lsp.cli.arguments import EXIT_OK, UsageError
from roofline_lsp.llm.finetune import export_finetune
from roofline_lsp.lsp.server import main_serve
from roofline_lsp.model.gpus import (
    GpuProfileError,
    UnknownGpuError,
    format_table,
    gpu_json,
    load_registry,
)


def cmd_gpus(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        registry = load_registry(ns.gpu_profiles)
    except GpuProfileError as e:
        raise UsageError(str(e)) from None
    if ns.json:
        out.write(json.dumps([gpu_json(g) for g in registry.all()], indent=2) + "\n")
    else:
        out.write(format_table(registry) + "\n")
    return EXIT_OK


def cmd_serve(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if ns.tcp:
        host, _, port = ns.tcp.rpartition(":")
        if not host or not port.isdigit():
            raise UsageError("--tcp: expected HOST:PORT, e.g. 127.0.0.1:2087")
    return main_serve(ns.tcp)


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
