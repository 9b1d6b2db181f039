"""``eval``'s run: the editor's pipeline over a labelled dataset folder.

Each file is read and detected once, compiled through :meth:`Workspace.compile_counts` (the
editor's compile, 2 at a time, cached), and each row's kernel gets its verdict from
:func:`refinement.kernel_verdict` (the function every editor verdict comes from) with the
row's launch dimensions and arguments as inputs, then optionally the LLM's answer. What
``eval`` scores is what the editor would show for that launch.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

from roofline_lsp.compiler.compiled import DEFAULT_JOBS
from roofline_lsp.compiler.kernel_ptx import CompiledCounts
from roofline_lsp.detect.kernels import detect
from roofline_lsp.engine.refinement import ask_llm, kernel_verdict, wants_llm
from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.evaluation.dataset import Row, load_rows, rows_by_file
from roofline_lsp.evaluation.scoring import EvalResult
from roofline_lsp.llm.backend import LlmError
from roofline_lsp.model.kernel import Detection

Progress = Callable[[int, int], None]


def run_dataset(
    ws: Workspace,
    dataset: str,
    *,
    detection_only: bool = False,
    progress: Progress | None = None,
    compile_progress: Progress | None = None,
) -> tuple[EvalResult, dict[str, str]]:
    """Detect every row's kernel (a detected kernel of its file starting at its ``line``)
    and, unless ``detection_only``, give it a verdict. Returns the result (its ``extra``:
    the compile time and how many kernels got PTX counts) and, by row id, where each
    verdict's FLOP/integer counts came from (``ptx`` or ``source``)."""
    rows = load_rows(dataset)
    start = time.perf_counter()
    files: dict[str, Detection] = {}
    for rel, file_rows in rows_by_file(rows).items():
        path = os.path.join(dataset, "sources", rel)
        source, problem = ws.read(path)
        if source is None:
            for r in file_rows:
                r.error = f"{rel}: {problem}"
            continue
        det = detect(source, path)
        files[path] = det
        for r in file_rows:
            r.detection = det
            r.kernel = next((k for k in det.kernels if k.line == r.data["line"]), None)
    extra: dict[str, object] = {}
    if detection_only:
        return EvalResult(rows, time.perf_counter() - start, True, extra), {}
    compiled: dict[str, dict[int, CompiledCounts]] = {}
    if ws.config.counts != "source":
        t0 = time.perf_counter()
        compiled = asyncio.run(_compile_all(ws, files, compile_progress))
        extra["compile_seconds"] = round(time.perf_counter() - t0, 2)
    counts_from: dict[str, str] = {}
    for done, r in enumerate(rows, 1):
        if r.kernel is not None and r.detection is not None:
            path = os.path.join(dataset, "sources", str(r.data["file"]))
            cc = compiled.get(path, {}).get(r.kernel.line)
            counts_from[r.id] = "ptx" if cc is not None and cc.ok else "source"
            cfg, gpus = ws.file_config(path)
            try:
                r.verdict = kernel_verdict(
                    r.kernel,
                    r.detection,
                    gpus[0],
                    cfg,
                    inputs=r.inputs(),
                    measured=ws.measured_for(cfg),
                    compiled=cc,
                )
            except Exception as e:  # a failing kernel is scored wrong, never fatal
                r.error = f"{type(e).__name__}: {e}"
        if progress is not None:
            progress(done, len(rows))
    found = list(counts_from.values())
    extra["counts"] = {
        "mode": ws.config.counts,
        "ptx": found.count("ptx"),
        "source": found.count("source"),
    }
    return EvalResult(rows, time.perf_counter() - start, False, extra), counts_from


async def _compile_all(
    ws: Workspace, files: dict[str, Detection], progress: Progress | None
) -> dict[str, dict[int, CompiledCounts]]:
    slots = asyncio.Semaphore(DEFAULT_JOBS)
    done = 0

    async def one(path: str, det: Detection) -> tuple[str, dict[int, CompiledCounts] | str]:
        nonlocal done
        counts = await ws.compile_counts(path, None, det, semaphore=slots)
        done += 1
        if progress is not None:
            progress(done, len(files))
        return path, counts

    results = await asyncio.gather(*(one(p, d) for p, d in files.items()))
    return {path: counts for path, counts in results if not isinstance(counts, str)}


async def ask_llm_for_rows(ws: Workspace, result: EvalResult, progress: Progress | None) -> None:
    """Replace each row's verdict by the LLM's (``refinement.wants_llm``), the row's launch
    in the prompt; a failure is the row's error. Statistics go to ``result.extra["llm"]``."""
    backend, problem = ws.llm_backend()
    if backend is None:
        result.extra["llm"] = {"error": problem or "LLM backend not configured"}
        return
    rows = [
        r
        for r in result.rows
        if r.kernel is not None and (r.verdict is None or wants_llm(r.verdict))
    ]
    done = 0

    async def one(r: Row) -> None:
        nonlocal done
        assert r.kernel is not None and r.detection is not None
        gpu = ws.file_config(r.kernel.file)[1][0]
        try:
            r.verdict = await ask_llm(
                backend, r.kernel, r.detection, gpu, r.verdict, inputs=r.inputs()
            )
        except LlmError as e:
            r.error = f"LLM: {e}"
        done += 1
        if progress is not None:
            progress(done, len(rows))

    try:
        await asyncio.gather(*(one(r) for r in rows))
    finally:
        await ws.aclose()
    s = backend.stats
    result.extra["llm"] = {
        "model": ws.config.llm.model,
        "mode": ws.config.llm.mode,
        "requests": s.requests,
        "cache_hits": s.cache_hits,
        "prompt_tokens": s.prompt_tokens,
        "completion_tokens": s.completion_tokens,
        "errors": s.errors,
    }
