"""``roofline-lsp report PATH... --html OUT.html [--svg OUT.svg]``: the roofline chart of
every kernel of files and folders on each ``--gpu`` (``present/roofline_chart.py``).

The kernels are analysed exactly as ``check`` analyses them, through the same run
(``engine/file_run.py``: worker processes and the results cache with the static backend),
and the chart is drawn from the objects ``check --format json`` writes. With ``--profile``
the static run gives the estimates and a second run with the profile (cached the same way)
gives the measured verdicts drawn beside them: the chart shows how far the estimate is from
the hardware, where ``check`` shows the measurement in place of the estimate.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TextIO

from roofline_lsp.cli.arguments import EXIT_NOTHING, EXIT_OK, Progress, UsageError
from roofline_lsp.cli.session import workspace_from_args
from roofline_lsp.engine.file_run import check_files, default_jobs, outcome_of, run_files
from roofline_lsp.engine.files import InputError, collect_files
from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.model.config import Config
from roofline_lsp.present.roofline_chart import build_chart, chart_html, chart_svg


def cmd_report(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if not ns.html and not ns.svg:
        raise UsageError("report: give --html OUT.html and/or --svg OUT.svg")
    ws = workspace_from_args(ns)  # checks the GPUs and loads the profile (usage errors)
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

    def say(line: str) -> None:
        err.write(line + "\n")

    config = ws.config
    kernels = _kernels(replace(config, profile=None), files, base, err, say)
    measured = _kernels(config, files, base, err, say) if config.profile else []
    gpus = ws.file_config("")[1]
    chart = build_chart(
        kernels, gpus, measured=measured, title=ns.title or "Roofline: " + ", ".join(ns.paths)
    )
    for flag, path, render in (("--html", ns.html, chart_html), ("--svg", ns.svg, chart_svg)):
        if not path:
            continue
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(render(chart))
        except OSError as e:
            raise UsageError(f"{flag} {path}: {e.strerror or e}") from None
        out.write(f"{path}\n")
    n = len(chart.kernels)
    err.write(
        f"{n} kernel{'s' if n != 1 else ''} in {len(files)} file(s) on "
        + ", ".join(g.name for g in gpus)
        + "\n"
    )
    return EXIT_OK


def _kernels(
    config: Config,
    files: Sequence[str],
    base: str | None,
    err: TextIO,
    say: Callable[[str], None],
) -> list[dict[str, Any]]:
    """``check --format json``'s kernel objects for ``files`` under ``config``."""
    if config.backend == "static":
        outcomes = check_files(config, files, base=base, jobs=default_jobs(), say=say)
    else:  # the LLM's answers have their own cache; the run stays in this process
        bars: dict[str, Progress] = {}

        def progress(stage: str, done: int, total: int) -> None:
            bars.setdefault(stage, Progress(stage, err))(done, total)

        ws = Workspace(config)
        if config.profile:
            ws.load_measured(config.profile)
        reports = run_files(ws, files, progress=progress, say=say)
        outcomes = [outcome_of(fr, base, ws.registry()) for fr in reports]
    return [json.loads(k) for o in outcomes for k in o.json]
