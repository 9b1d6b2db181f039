"""``check``'s run: the editor's pipeline over files, all at once.

Each file is read, analysed (source counts), then, as in the editor, re-analysed with its
compile's counts (cached; a file is detected once, and only the kernels given counts are
estimated again), then refined by the LLM when it is enabled. Problems are reported through
``say`` (one line each); nothing raises.

With the static backend (:func:`check_files`) the files are analysed in a pool of worker
processes (``jobs``; each worker also runs its files' compiles, so nvcc shares the same
cores), and each file's outcome is plain data: its output lines already rendered
(:class:`FileOutcome`), gathered in the order of ``files`` so that any ``jobs`` writes the same
output. Outcomes are kept in the results cache (``check_cache.py``) and served again while
nothing they depend on changed. With an LLM backend the run stays in one process
(:func:`run_files`): the LLM's answers have their own cache.
"""

from __future__ import annotations

import asyncio
import gc
import json
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import Any

from roofline_lsp.compiler.compiled import DEFAULT_JOBS
from roofline_lsp.detect.kernels import may_hold_kernels
from roofline_lsp.engine.check_cache import (
    Dependencies,
    compile_deps,
    file_key,
    read_deps,
    results_cache,
    run_key,
)
from roofline_lsp.engine.files import read_source, utf8_note
from roofline_lsp.engine.refinement import ask_llm, wants_llm
from roofline_lsp.engine.time_budget import DEFAULT_FILE_SECONDS, OverBudget, cpu_budget
from roofline_lsp.engine.workspace import Workspace, with_llm_answers
from roofline_lsp.llm.backend import LlmError
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import GpuRegistry
from roofline_lsp.model.report import FileReport
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.present.json_output import dumps, to_json
from roofline_lsp.present.sarif import to_sarif
from roofline_lsp.present.text_output import display_path, text_lines
from roofline_lsp.store.cache import ResultCache
from roofline_lsp.syntax.sources import SourceView, read_from_disk

Progress = Callable[[str, int, int], None]  # (stage, done, total)
Say = Callable[[str], None]  # one line for the user


def run_files(
    ws: Workspace,
    files: Sequence[str],
    *,
    progress: Progress,
    say: Say,
    file_seconds: float | None = DEFAULT_FILE_SECONDS,
) -> list[FileReport]:
    """The reports of ``files`` (those that could be read and analysed within
    ``file_seconds`` of CPU time each), in order."""
    sources: list[bytes] = []
    reports: list[FileReport] = []
    for i, path in enumerate(files, 1):
        source, problem = ws.read(path)
        if source is not None:
            note = utf8_note(source)
            if note is not None:
                say(f"{path}: {note}")
            try:
                with cpu_budget(file_seconds):
                    report = ws.analyse_source(path, source)
            except OverBudget:
                problem = over_budget(file_seconds)
            else:
                sources.append(source)
                reports.append(report)
        if problem is not None:
            say(f"{path}: {problem}")
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
        refined = await ws.with_compiled_counts(fr, source, semaphore=slots)
        done += 1
        progress("compiling", done, len(reports))
        return refined

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


def over_budget(seconds: float | None) -> str:
    """Why a file over its time budget was skipped (one line)."""
    return f"skipped: analysis took over {seconds or 0:g} CPU seconds (--file-timeout)"


# -- the static run: a process pool and a results cache ---------------------------------------


@dataclass(frozen=True)
class FileOutcome:
    """One file's part of ``check``'s output, as plain data (it crosses processes and is
    cached): the text lines, each kernel's JSON object as the JSON writer indents it at the
    top level, and each SARIF result as JSON text (keys in the order the writers made them).
    ``problem``: why the file was not analysed (then everything else is empty); ``note``: a
    remark on a file that was analysed (invalid UTF-8), said on stderr, not cached."""

    path: str
    problem: str | None = None
    text: tuple[str, ...] = ()
    json: tuple[str, ...] = ()
    sarif: tuple[str, ...] = ()
    kernels: int = 0
    cached: bool = False
    note: str | None = None

    def to_data(self) -> dict[str, Any]:
        return {
            "text": list(self.text),
            "json": list(self.json),
            "sarif": list(self.sarif),
            "kernels": self.kernels,
        }

    @classmethod
    def from_data(cls, path: str, d: Any) -> FileOutcome | None:
        try:
            text, js, sarif, n = d["text"], d["json"], d["sarif"], d["kernels"]
        except (TypeError, KeyError):
            return None
        if not all(
            isinstance(x, list) and all(isinstance(s, str) for s in x) for x in (text, js, sarif)
        ) or not isinstance(n, int):
            return None
        return cls(path, None, tuple(text), tuple(js), tuple(sarif), n, cached=True)


def _jtext(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def outcome_of(fr: FileReport, base: str | None, registry: GpuRegistry) -> FileOutcome:
    """The rendered output of one file's report; ``registry``: the GPU profiles its verdicts
    were made with, so that a GPU given only by ``--gpu-profiles`` gets its advice too."""
    sarif = to_sarif([fr], base, registry)["runs"][0]["results"]
    return FileOutcome(
        fr.path,
        None,
        tuple(text_lines([fr], base, registry)),
        tuple(dumps(d).rstrip("\n") for d in to_json([fr], base, registry)),
        tuple(_jtext(r) for r in sarif),
        len(fr.kernels),
    )


@dataclass(frozen=True)
class CheckRun:
    """What a run needs in every process."""

    config: Config
    base: str | None
    run_key: str
    use_cache: bool = True
    file_seconds: float | None = None  # CPU time for one file's analysis; None: no limit


class _Worker:
    """One process's engine: the workspace (GPUs, measured profile) and the caches."""

    def __init__(self, run: CheckRun) -> None:
        self.run = run
        self.ws = Workspace(run.config)
        if run.config.profile:
            self.ws.load_measured(run.config.profile)
        self.cache = results_cache(run.config) if run.use_cache else None  # opened when used
        self.deps = Dependencies()

    def check(self, path: str) -> tuple[FileOutcome, Entry | None]:
        """One file's outcome: from the results cache when its entry is current, else
        analysed (and compiled), with the entry to store (the caller stores them all in one
        transaction)."""
        cfg = self.run.config.for_file(path)
        source, problem = read_source(path, cfg.max_file_bytes)
        if source is None:
            return FileOutcome(path, problem), None
        note = utf8_note(source)
        if not may_hold_kernels(source):
            return FileOutcome(path, note=note), None  # nothing to analyse, nothing it reads
        key = ""
        if self.cache is not None:
            key = file_key(self.run.run_key, path, display_path(path, self.run.base), source)
            hit = self._lookup(self.cache, key, path)
            if hit is not None:
                return replace(hit, note=note), None
        try:
            with cpu_budget(self.run.file_seconds):
                out, deps = self._analyse(path, source)
        except OverBudget:
            return FileOutcome(path, over_budget(self.run.file_seconds)), None
        except Exception as e:  # a bug on one file must not cost the others
            return FileOutcome(path, f"internal error: {type(e).__name__}: {e}"), None
        out = replace(out, note=note)
        if self.cache is None:
            return out, None
        return out, (key, {"deps": deps, "out": out.to_data()})

    def _lookup(self, cache: ResultCache, key: str, path: str) -> FileOutcome | None:
        entry = cache.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("deps"), list):
            return None
        if not self.deps.current(entry["deps"]):
            return None  # something it read changed: never served stale
        return FileOutcome.from_data(path, entry.get("out"))

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    def _analyse(self, path: str, source: bytes) -> tuple[FileOutcome, list[Any]]:
        view = SourceView(read_from_disk)  # records every file read, versioned by content
        fr = self.ws.analyse_source(path, source, read=view)
        extra: list[Any] = []
        if self.ws.file_config(path)[0].counts != "source" and fr.detection.kernels:
            fr = asyncio.run(self.ws.with_compiled_counts(fr, source, read=view))
            extra = compile_deps(path, view)
        return outcome_of(fr, self.run.base, self.ws.registry()), read_deps(view.stamps()) + extra


Entry = tuple[str, dict[str, Any]]  # a results-cache key and its value
_WORKER: _Worker | None = None
MIN_POOL_FILES = 4  # fewer files are analysed in this process: starting workers costs more


# the analysis allocates millions of short-lived objects without cycles: the default
# collection every 700 allocations took ~5% of a check's CPU time; memory is the same
GC_THRESHOLD = (50_000, 20, 100)


def _init_worker(run: CheckRun) -> None:
    global _WORKER
    gc.set_threshold(*GC_THRESHOLD)
    _WORKER = _Worker(run)


def _check_in_worker(paths: Sequence[str]) -> list[tuple[FileOutcome, Entry | None]]:
    assert _WORKER is not None
    return [_WORKER.check(p) for p in paths]


def batches(files: Sequence[str], todo: Sequence[int], size: int = 16) -> list[list[int]]:
    """``todo`` in batches of files of one folder (at most ``size``): a program's files go to
    one worker, which parses the headers and siblings they share once."""
    by_dir: dict[str, list[int]] = {}
    for i in todo:
        by_dir.setdefault(os.path.dirname(os.path.abspath(files[i])), []).append(i)
    out = [g[k : k + size] for g in by_dir.values() for k in range(0, len(g), size)]
    # the largest first: the last batches to finish are small, so no worker waits long idle
    return sorted(out, key=lambda b: -sum(_size(files[i]) for i in b))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def check_files(
    config: Config,
    files: Sequence[str],
    *,
    base: str | None = None,
    jobs: int = 1,
    use_cache: bool = True,
    file_seconds: float | None = DEFAULT_FILE_SECONDS,
    progress: Callable[[int, int, int], None] | None = None,
    say: Say = lambda _line: None,
) -> list[FileOutcome]:
    """The outcome of every readable file of ``files``, in order (``config.backend`` must be
    static), ``jobs`` processes at a time: served from the results cache when nothing it
    depends on changed, else analysed (a file whose analysis takes over ``file_seconds`` of
    CPU time is skipped). ``progress(done, total, cached)``. Skipped files and notes are
    said in one line each, in file order."""
    run = CheckRun(config, base, run_key(config) if use_cache else "", use_cache, file_seconds)
    total = len(files)
    results: list[FileOutcome | None] = [None] * total
    todo = list(range(total))
    done = cached = 0
    if progress is not None:
        progress(done, total, cached)
    entries: list[Entry] = []

    def finished(i: int, out: FileOutcome, entry: Entry | None) -> None:
        nonlocal done, cached
        results[i] = out
        if entry is not None:
            entries.append(entry)
        done += 1
        cached += out.cached
        if progress is not None:
            progress(done, total, cached)

    if jobs > 1 and len(todo) >= MIN_POOL_FILES:
        todo = _run_pool(run, files, todo, min(jobs, len(todo)), finished, say)
    if todo:
        worker = _Worker(run)
        thresholds = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLD)
        try:
            for i in todo:
                finished(i, *worker.check(files[i]))
        finally:
            gc.set_threshold(*thresholds)
            worker.close()
    if entries:
        cache = results_cache(config)
        cache.set_many(entries)
        cache.close()
    out = [r for r in results if r is not None]
    for r in out:
        for line in (r.note, r.problem):
            if line is not None:
                say(f"{r.path}: {line}")
    return [r for r in out if r.problem is None]


def _run_pool(
    run: CheckRun,
    files: Sequence[str],
    todo: list[int],
    jobs: int,
    finished: Callable[[int, FileOutcome, Entry | None], None],
    say: Say,
) -> list[int]:
    """Analyse ``todo`` in ``jobs`` processes; the indexes left undone (a broken pool: they
    are then analysed in this process)."""
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    left = set(todo)
    gc.freeze()  # forked workers share the imported modules' pages: no collection copies them
    try:
        with ProcessPoolExecutor(
            jobs, mp_context=ctx, initializer=_init_worker, initargs=(run,)
        ) as pool:
            pending: dict[Future[list[tuple[FileOutcome, Entry | None]]], list[int]] = {
                pool.submit(_check_in_worker, [files[i] for i in batch]): batch
                for batch in batches(files, todo)
            }
            for fut in as_completed(pending):
                for i, (out, entry) in zip(pending[fut], fut.result(), strict=True):
                    finished(i, out, entry)
                    left.discard(i)
    except BrokenProcessPool as e:
        say(f"roofline-lsp: a worker process died ({e}); analysing the rest in one process")
    finally:
        gc.unfreeze()
    return [i for i in todo if i in left]
