"""``roofline-lsp check PATH...``: every kernel of files and folders, in text, JSON or SARIF.

The same steps as the editor, through the same engine: analyse each file (source counts),
refine with the compiler's PTX counts (compiles 2 at a time, cached), then with the LLM when
it is enabled. A file is detected once; its compile re-estimates only the kernels it counts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence
from typing import TextIO

from roofline_lsp.cli.arguments import (
    EXIT_NOTHING,
    EXIT_OK,
    Progress,
    UsageError,
    workspace_from_args,
)
from roofline_lsp.compiler.compiled import DEFAULT_JOBS
from roofline_lsp.engine.files import InputError, collect_files
from roofline_lsp.engine.refinement import ask_llm, wants_llm
from roofline_lsp.engine.workspace import Workspace, with_llm_answers
from roofline_lsp.llm.backend import LlmError
from roofline_lsp.model.report import FileReport
from roofline_lsp.model.verdict import Verdict
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
    sources: list[bytes] = []
    reports: list[FileReport] = []
    progress = Progress("analysing", err)
    for i, path in enumerate(files, 1):
        source, problem = ws.read(path)
        if source is None:
            err.write(f"{path}: {problem}\n")
        else:
            sources.append(source)
            reports.append(ws.analyse_source(path, source))
        progress(i, len(files))
    if ws.config.counts != "source":
        reports = asyncio.run(refine_with_ptx(ws, reports, sources, err))
    if ws.config.backend != "static":
        reports = asyncio.run(refine_with_llm(ws, reports, err))
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


async def refine_with_ptx(
    ws: Workspace, reports: Sequence[FileReport], sources: Sequence[bytes], err: TextIO
) -> list[FileReport]:
    """Each report re-analysed with its file's compiler counts (the kernels given counts are
    re-estimated, a failed compile's reason joins their terms); files without kernels or
    without anything to compile stay as they are."""
    slots = asyncio.Semaphore(DEFAULT_JOBS)
    progress = Progress("compiling", err)
    done = 0

    async def one(fr: FileReport, source: bytes) -> FileReport:
        nonlocal done
        counts = await ws.compile_counts(fr.path, None, fr.detection, semaphore=slots)
        done += 1
        progress(done, len(reports))
        if isinstance(counts, str):
            return fr
        return ws.analyse_source(fr.path, source, previous=fr, compiled=counts)

    pairs = zip(reports, sources, strict=True)
    return list(await asyncio.gather(*(one(fr, source) for fr, source in pairs)))


async def refine_with_llm(
    ws: Workspace, reports: Sequence[FileReport], err: TextIO
) -> list[FileReport]:
    """Ask the LLM for the target-GPU verdict of every kernel it may refine
    (``refinement.wants_llm``); on failure keep the verdict and say why in one line."""
    backend, problem = ws.llm_backend()
    if backend is None:  # backend auto without a key or a local endpoint: static verdicts
        if problem is not None:
            err.write(f"roofline-lsp: LLM backend: {problem} (kept the static verdicts)\n")
        return list(reports)
    jobs = [
        (i, j)
        for i, fr in enumerate(reports)
        for j, kr in enumerate(fr.kernels)
        if wants_llm(kr.verdict)
    ]
    progress = Progress("asking the LLM", err)
    done = 0
    failures: list[str] = []

    async def one(i: int, j: int) -> tuple[tuple[int, int], Verdict | None]:
        nonlocal done
        fr = reports[i]
        kr = fr.kernels[j]
        v: Verdict | None
        try:
            gpu = ws.file_config(fr.path)[1][0]
            v = await ask_llm(backend, kr.kernel, fr.detection, gpu, kr.verdict)
        except LlmError as e:
            failures.append(f"{fr.path}:{kr.kernel.line}: {kr.kernel.name}: LLM: {e}")
            v = None
        done += 1
        progress(done, len(jobs))
        return (i, j), v

    try:
        results = await asyncio.gather(*(one(i, j) for i, j in jobs))
    finally:
        await ws.aclose()
    for line in failures:
        err.write(line + " (kept the static verdict)\n")
    s = backend.stats
    err.write(
        f"LLM: {s.requests} request(s), {s.cache_hits} cache hit(s), "
        f"{s.prompt_tokens + s.completion_tokens} tokens\n"
    )
    return with_llm_answers(reports, {key: v for key, v in results if v is not None})
