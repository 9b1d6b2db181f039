"""``roofline-lsp gpus``: the GPU profiles and their ridge points, as a table or JSON."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from roofline_lsp.cli.arguments import EXIT_OK, UsageError
from roofline_lsp.model.gpus import GpuProfileError, format_table, gpu_json, load_registry


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
