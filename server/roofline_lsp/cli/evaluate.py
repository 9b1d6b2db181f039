"""``roofline-lsp eval --dataset DIR``: score detection and verdicts against a labelled folder
through the engine's dataset run (``engine.dataset_run``): what the editor would show."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import TextIO

from roofline_lsp.cli.arguments import EXIT_OK, Progress, UsageError
from roofline_lsp.cli.session import workspace_from_args
from roofline_lsp.engine.dataset_run import ask_llm_for_rows, run_dataset
from roofline_lsp.evaluation.dataset import DatasetError
from roofline_lsp.evaluation.scoring import error_groups
from roofline_lsp.present.explanations import explanation


def cmd_eval(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    ws = workspace_from_args(ns)
    try:
        result, counts_from = run_dataset(
            ws,
            ns.dataset,
            detection_only=ns.detection_only,
            progress=Progress("evaluating", err),
            compile_progress=Progress("compiling", err),
        )
    except DatasetError as e:
        raise UsageError(str(e)) from None
    if ws.config.backend != "static" and not ns.detection_only:
        asyncio.run(ask_llm_for_rows(ws, result, Progress("asking the LLM", err)))
    summary = {
        "dataset": os.path.basename(os.path.normpath(ns.dataset)),
        "gpu": ws.file_config(ns.dataset)[1][0].name,
        **result.summary(),
    }
    for pred in summary["predictions"]:
        if pred["id"] in counts_from:
            pred["counts_from"] = counts_from[pred["id"]]
    printable = {k: v for k, v in summary.items() if k != "predictions"}
    out.write(json.dumps(printable, indent=2) + "\n")
    if ns.errors and not ns.detection_only:
        for cause, rows in error_groups(result).items():
            out.write(f"\n## {cause} ({len(rows)})\n")
            for r in rows:
                expl = explanation(r.verdict) if r.verdict else r.error or ""
                out.write(f"  {r.id} [{r.label} -> {r.predicted}] {expl}\n")
    if ns.json:
        try:
            with open(ns.json, "w", encoding="utf-8") as f:
                json.dump(summary, f, indent=2)
                f.write("\n")
        except OSError as e:
            raise UsageError(f"--json {ns.json}: {e.strerror or e}") from None
    return EXIT_OK
