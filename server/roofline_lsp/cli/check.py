"""``roofline-lsp check PATH...``: every kernel of files and folders, in text, JSON or SARIF,
through the engine's run over files (``engine/file_run.py``: the editor's pipeline).

With the static backend the files are analysed ``-j`` processes at a time and served from the
results cache when nothing they depend on changed; ``--changed-since`` and ``--shard`` narrow
the files for CI. Each file's output comes back already rendered and is joined here in the
files' order, so the output does not depend on ``-j``."""

from __future__ import annotations

import argparse
import json
import os
import textwrap
import time
from typing import Any, TextIO

from roofline_lsp.cli.arguments import (
    EXIT_NOTHING,
    EXIT_OK,
    Progress,
    UsageError,
)
from roofline_lsp.cli.session import workspace_from_args
from roofline_lsp.engine.changed_files import changed_files, changed_paths, parse_shard, shard
from roofline_lsp.engine.file_run import (
    FileOutcome,
    check_files,
    default_jobs,
    outcome_of,
    run_files,
)
from roofline_lsp.engine.files import InputError, collect_files
from roofline_lsp.present.json_output import dumps
from roofline_lsp.present.sarif import to_sarif
from roofline_lsp.present.text_output import with_explanations
from roofline_lsp.syntax.parsing import SOURCE_EXTENSIONS


def cmd_check(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    ws = workspace_from_args(ns)
    jobs = default_jobs() if ns.jobs is None else ns.jobs
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if not ns.file_timeout >= 0:  # also NaN
        raise UsageError("--file-timeout must be 0 (no limit) or more seconds")
    try:
        files, _ = collect_files(ns.paths)
        if ns.shard:
            shard_i, shard_n = parse_shard(ns.shard)
        if ns.changed_since:
            files = changed_files(files, changed_paths(ns.changed_since, ns.paths[0]))
        if ns.shard:
            files = shard(files, shard_i, shard_n)
    except InputError as e:
        raise UsageError(str(e)) from None
    for f in [f for f in files if not f.lower().endswith(SOURCE_EXTENSIONS)]:
        err.write(f"roofline-lsp: {f}: skipped: not a source file\n")  # as a folder skips it
        files.remove(f)
    base = ns.paths[0] if len(ns.paths) == 1 and os.path.isdir(ns.paths[0]) else None
    if not files:
        if ns.changed_since or ns.shard:  # nothing to do is a success: an empty result
            return _write(ns, out, err, [], base, 0)
        err.write(
            "roofline-lsp: no source files (.cu .cuh .cpp .cc .cxx .c .h .hpp .hip) under "
            + ", ".join(ns.paths)
            + "\n"
        )
        return EXIT_NOTHING

    def say(line: str) -> None:
        err.write(line + "\n")

    if ws.config.backend == "static":
        bar = RateProgress(err, forced=ns.progress)
        outcomes = check_files(
            ws.config,
            files,
            base=base,
            jobs=jobs,
            use_cache=not ns.no_cache,
            file_seconds=ns.file_timeout,
            progress=bar,
            say=say,
        )
        bar.close()
    else:  # the LLM's answers have their own cache; the run stays in this process
        bars: dict[str, Progress] = {}

        def progress(stage: str, done: int, total: int) -> None:
            bars.setdefault(stage, Progress(stage, err))(done, total)

        reports = run_files(ws, files, progress=progress, say=say, file_seconds=ns.file_timeout)
        outcomes = [outcome_of(fr, base, ws.registry()) for fr in reports]
    return _write(ns, out, err, outcomes, base, len(files))


def _write(
    ns: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    outcomes: list[FileOutcome],
    base: str | None,
    nfiles: int,
) -> int:
    if ns.format == "text":
        for o in outcomes:
            lines = with_explanations(o.text, o.json) if ns.explain else list(o.text)
            out.write("".join(line + "\n" for line in lines))
        n = sum(o.kernels for o in outcomes)
        err.write(f"{n} kernel{'s' if n != 1 else ''} in {nfiles} file(s)\n")
        return EXIT_OK
    if ns.format == "json":
        text = json_list([s for o in outcomes for s in o.json])
    else:
        doc: Any = to_sarif([], base)
        doc["runs"][0]["results"] = [json.loads(s) for o in outcomes for s in o.sarif]
        text = dumps(doc)
    if ns.output:
        try:
            with open(ns.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise UsageError(f"--output {ns.output}: {e.strerror or e}") from None
    else:
        out.write(text)
    return EXIT_OK


def json_list(items: list[str]) -> str:
    """The list of JSON texts ``items`` (each as ``dumps`` writes it) as ``dumps`` writes the
    list, without parsing them again: each line indented one level."""
    if not items:
        return dumps([])
    return "[\n" + ",\n".join(textwrap.indent(s, "  ") for s in items) + "\n]\n"


class RateProgress:
    """``checking 120/944 files (80 cached) 35.2 files/s ETA 23s`` on one line of stderr,
    when it is a terminal (or ``--progress``); redrawn at most 10 times a second."""

    def __init__(self, stream: TextIO, *, forced: bool = False) -> None:
        self.stream = stream
        self.enabled = forced or stream.isatty()
        self.t0 = time.monotonic()
        self.last = 0.0
        self.width = 0
        self.start: int | None = None  # files done before analysing began (cached)

    def __call__(self, done: int, total: int, cached: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if self.start is None:
            self.start, self.t0 = done, now
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        analysed, elapsed = done - self.start, now - self.t0
        rate = analysed / elapsed if elapsed > 0 else 0.0
        line = f"checking {done}/{total} files"
        if cached:
            line += f" ({cached} cached)"
        if analysed and rate > 0:
            line += f"  {rate:.1f} files/s  ETA {(total - done) / rate:.0f}s"
        self.width = max(self.width, len(line))
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
