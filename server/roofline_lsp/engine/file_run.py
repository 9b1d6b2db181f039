"""``check``'s run: the editor's pipeline over files, all at once.

Each file is read through the workspace (open buffers first), analysed (source counts), then,
as in the editor, re-analysed with its compile's counts (2 compiles at a time, cached; a file
is detected once, and only the kernels given counts are estimated again), then refined by the
LLM when it is enabled. Problems are reported through ``say`` (one line each); nothing raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from roofline_lsp.compiler.compiled import DEFAULT_JOBS
from roofline_lsp.engine.refinement import ask_llm, wants_llm
from roofline_lsp.engine.workspace import Workspace, with_llm_answers
from roofline_lsp.llm.backend import LlmError
from roofline_lsp.model.report import FileReport
from roofline_lsp.model.verdict import Verdict

Progress = Callable[[str, int, int], None]  # (stage, done, total)
Say = Callable[[str], None]  # one line for the user


def run_files(
    ws: Workspace, files: Sequence[str], *, progress: Progress, say: Say
) -> list[FileReport]:
    """The reports of ``files`` (those that could be read), in order."""
    sources: list[bytes] = []
    reports: list[FileReport] = []
    for i, path in enumerate(files, 1):
        source, problem = ws.read(path)
        if source is None:
            say(f"{path}: {problem}")
        else:
            sources.append(source)
            reports.append(ws.analyse_source(path, source))
        progress("analysing", i, len(files))
    if ws.config.counts != "source":
        reports = asyncio.run(refine_with_ptx(ws, reports, sources, progress))
    if ws.config.backend != "static":
        reports = asyncio.run(refine_with_llm(ws, reports, progress, say))
    return reports


async def refine_with_ptx(
    ws: Workspace, reports: Sequence[FileReport], sources: Sequence[bytes], progress: Progress
) -> list[FileReport]:
    """Each report re-analysed with its file's compiler counts (the kernels given counts are
    re-estimated, a failed compile's reason joins their terms); files without kernels or
    without anything to compile stay as they are."""
    slots = asyncio.Semaphore(DEFAULT_JOBS)
    done = 0

    async def one(fr: FileReport, source: bytes) -> FileReport:
        nonlocal done
        counts = await ws.compile_counts(fr.path, None, fr.detection, semaphore=slots)
        done += 1
        progress("compiling", done, len(reports))
        if isinstance(counts, str):
            return fr
        return ws.analyse_source(fr.path, source, previous=fr, compiled=counts)

    pairs = zip(reports, sources, strict=True)
    return list(await asyncio.gather(*(one(fr, source) for fr, source in pairs)))


async def refine_with_llm(
    ws: Workspace, reports: Sequence[FileReport], progress: Progress, say: Say
) -> list[FileReport]:
    """Ask the LLM for the target-GPU verdict of every kernel it may refine
    (``refinement.wants_llm``); on failure keep the verdict and say why in one line."""
    backend, problem = ws.llm_backend()
    if backend is None:  # backend auto without a key or a local endpoint: static verdicts
        if problem is not None:
            say(f"roofline-lsp: LLM backend: {problem} (kept the static verdicts)")
        return list(reports)
    jobs = [
        (i, j)
        for i, fr in enumerate(reports)
        for j, kr in enumerate(fr.kernels)
        if wants_llm(kr.verdict)
    ]
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
        progress("asking the LLM", done, len(jobs))
        return (i, j), v

    try:
        results = await asyncio.gather(*(one(i, j) for i, j in jobs))
    finally:
        await ws.aclose()
    for line in failures:
        say(line + " (kept the static verdict)")
    s = backend.stats
    say(
        f"LLM: {s.requests} request(s), {s.cache_hits} cache hit(s), "
        f"{s.prompt_tokens + s.completion_tokens} tokens"
    )
    return with_llm_answers(reports, {key: v for key, v in results if v is not None})
