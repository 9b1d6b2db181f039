"""``roofline-lsp check PATH...``: every kernel of files and folders, in text, JSON or SARIF,
through the engine's run over files (``engine/file_run.py``: the editor's pipeline)."""

from __future__ import annotations

import argparse
import os
from typing import TextIO

from roofline_lsp.cli.arguments import (
    EXIT_NOTHING,
    EXIT_OK,
    Progress,
    UsageError,
)
from roofline_lsp.cli.session import workspace_from_args
from roofline_lsp.engine.file_run import run_files
from roofline_lsp.engine.files import InputError, collect_files
from roofline_lsp.present.json_output import dumps, to_json
from roofline_lsp.present.sarif import to_sarif
from roofline_lsp.present.text_output import text_lines


def cmd_check(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    ws = workspace_from_args(ns)
    try:
        files, _ = collect_files(ns.paths)
    except InputError as e:
        raise UsageError(str(e)) from None
    if not files:
        err.write(
            "roofline-lsp: no source files (.cu .cuh .cpp .cc .cxx .c .h .hpp .hip) under "
            + ", ".join(ns.paths)
            + "\n"
        )
        return EXIT_NOTHING
    base = ns.paths[0] if len(ns.paths) == 1 and os.path.isdir(ns.paths[0]) else None
    bars: dict[str, Progress] = {}

    def progress(stage: str, done: int, total: int) -> None:
        bars.setdefault(stage, Progress(stage, err))(done, total)

    def say(line: str) -> None:
        err.write(line + "\n")

    reports = run_files(ws, files, progress=progress, say=say)
    if ns.format == "text":
        out.write("".join(line + "\n" for line in text_lines(reports, base)))
        n = sum(len(r.kernels) for r in reports)
        err.write(f"{n} kernel{'s' if n != 1 else ''} in {len(files)} file(s)\n")
        return EXIT_OK
    doc = dumps(to_json(reports, base) if ns.format == "json" else to_sarif(reports, base))
    if ns.output:
        try:
            with open(ns.output, "w", encoding="utf-8") as f:
                f.write(doc)
        except OSError as e:
            raise UsageError(f"--output {ns.output}: {e.strerror or e}") from None
    else:
        out.write(doc)
    return EXIT_OK
