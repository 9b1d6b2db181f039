"""When the engine's work runs: analyses, PTX refinements and LLM requests, on asyncio.

The :class:`Scheduler` is to :class:`~roofline_lsp.engine.workspace.Workspace` what clangd's
TUScheduler is to its ASTs: the workspace knows *what* an analysis is, the scheduler knows
*when* one runs. An edit is analysed at once after a pause, else after the debounce time (a
burst of keystrokes is analysed once more after it ends); one analysis per document runs at a
time (an edit during it re-runs it after), in a single worker thread, with ``$/progress`` when
it takes longer than :data:`PROGRESS_AFTER_S`. A quiet moment after an analysis the text is
compiled to PTX and its kernels re-estimated with the compiler's counts (cancelled, killing
the compiler, by the next edit). With an LLM backend, one request per (document, kernel, GPU)
runs in the background, deduplicated by the kernel's text, cancelled when the kernel changes.

It has no LSP import: what the user sees goes through a :class:`Frontend` (the language
server implements it; the tests use a fake one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from roofline_lsp.compiler.compiled import DEFAULT_JOBS as COMPILE_JOBS
from roofline_lsp.compiler.compiled import want_for
from roofline_lsp.engine.documents import MAX_LINE_BYTES, Change, Document
from roofline_lsp.engine.refinement import wants_llm
from roofline_lsp.engine.workspace import (
    DocumentAnalysis,
    KernelPlace,
    LlmKey,
    Workspace,
    one_line,
)
from roofline_lsp.llm.backend import LlmBackend
from roofline_lsp.model.report import FileReport
from roofline_lsp.syntax.positions import Encoding

log = logging.getLogger("roofline_lsp.scheduler")

PROGRESS_AFTER_S = 0.5  # an analysis running longer than this reports $/progress
COMPILE_AFTER_S = 0.3  # quiet time after an analysis before compiling it to PTX
CONFIG_WAIT_S = 5.0  # the first analysis waits this long at most for the client's settings
FIRST_ANALYSIS_WAIT_S = 1.0  # a request before a document's first analysis waits this long
FRESH_WAIT_S = 2.0  # a command wanting a fresh analysis waits this long, then uses the last
MAX_PAUSE_MS = 2000  # the longest pause between re-analyses of a slow document
SLOW_JOB_MS = 250  # a job of the analysis thread running longer than this is followed by a rest
EXIT_GRACE_S = 0.05  # shutdown waits this long for cancelled work to unwind (kill compilers)

T = TypeVar("T")


class Frontend(Protocol):
    """What the scheduler tells the user (the language server implements it)."""

    def publish(self, analysis: DocumentAnalysis) -> None:
        """Show the diagnostics of ``analysis`` (the document's current analysis)."""

    def refresh_views(self) -> None:
        """Ask the client to fetch inlay hints and code lenses again."""

    def log(self, text: str) -> None:
        """A line for the client's log."""

    def show(self, text: str, info: bool = False) -> None:
        """A message for the user (a warning, or information with ``info``)."""

    def config_problem(self, key: str, text: str) -> None:
        """A setting (``key``) that cannot be used; shown once per message."""

    async def progress_begin(self, title: str) -> str | None:
        """Start a progress report; its token, or None when the client has none."""

    def progress_report(self, token: str, message: str, pct: int | None = None) -> None: ...

    def progress_end(self, token: str) -> None: ...


class Scheduler:
    """Background work for the documents of one :class:`Workspace`; event loop thread only."""

    def __init__(self, ws: Workspace, frontend: Frontend) -> None:
        self.ws = ws
        self.frontend = frontend
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="roofline-analysis")
        self.config_ready = asyncio.Event()  # set once the client's settings are applied
        self.running: set[asyncio.Task[object]] = set()
        self.pending: dict[str, asyncio.Task[None]] = {}  # debounced analyses
        self.analysing: set[str] = set()  # uris with a debounced analysis running
        self.dirty: set[str] = set()  # changed while being analysed
        self.last_edit: dict[str, float] = {}  # uri -> time.monotonic()
        self.cost_ms: dict[str, float] = {}  # uri -> wall time of its last analysis
        self.worker_free_at = 0.0  # time.monotonic() before which the worker rests
        self.compiles: dict[str, asyncio.Task[None]] = {}  # PTX refinements
        self.compile_slots = asyncio.Semaphore(COMPILE_JOBS)
        self.compile_failed: dict[str, str] = {}  # uri -> reason logged
        self.llm_tasks: dict[LlmKey, tuple[str, asyncio.Task[None]]] = {}
        self.llm_failed_shown = False
        self.declined_shown: set[str] = set()
        # set once a document's first analysis is installed (requests before it wait)
        self.analysed: dict[str, asyncio.Event] = {}

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A tracked background task whose failure is logged, never raised."""
        task = asyncio.ensure_future(coro)
        self.running.add(task)

        def done(t: asyncio.Task[T]) -> None:
            self.running.discard(t)
            if not t.cancelled() and t.exception() is not None:
                exc = t.exception()
                log.error("background task failed: %r", exc, exc_info=exc)

        task.add_done_callback(done)
        return task

    # -- documents ------------------------------------------------------------------------------
    def open(self, uri: str, text: str, version: int, language_id: str) -> Document:
        """Open (or re-open) ``uri`` and analyse it at once."""
        self.forget(uri)
        doc = self.ws.open_document(uri, text, version, language_id)
        self.analysed[uri] = asyncio.Event()
        self.schedule(uri, 0)
        return doc

    async def first_analysis(self, uri: str, timeout: float = FIRST_ANALYSIS_WAIT_S) -> None:
        """Wait (at most ``timeout`` seconds) for the first analysis of the open document
        ``uri``: a hover or inlay-hint request sent right after ``didOpen`` then answers
        from it instead of answering nothing. Returns at once when it is there already."""
        event = self.analysed.get(uri)
        if event is None or event.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)

    def change(
        self, uri: str, changes: list[Change], version: int, encoding: Encoding
    ) -> Document | None:
        """Apply an edit to ``uri`` (None: not open) and schedule its analysis."""
        doc = self.ws.documents.get(uri)
        if doc is None:
            return None
        doc.apply(changes, version, encoding)
        self.cancel_compile(uri)  # its text is out of date: kills the compiler process
        self.schedule(uri)
        self.schedule_dependents(doc.path, uri)
        return doc

    def close(self, uri: str) -> None:
        """``uri`` was closed: forget it; documents that read its unsaved text read the disk."""
        doc = self.ws.documents.get(uri)
        self.forget(uri)
        if doc is not None:
            self.schedule_dependents(doc.path, uri)

    def schedule_dependents(self, path: str, uri: str) -> None:
        """Analyse again, once edits pause, the other open documents whose last analysis read
        ``path`` (a header they include, a sibling file a kernel's callers or callees are in)."""
        for dep in self.ws.dependents(path):
            if dep != uri:
                self.schedule(dep, self.ws.config.debounce_ms)

    def forget(self, uri: str) -> None:
        """Stop all work on ``uri`` and drop what is known about it (closed, or re-opened)."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.cancel_compile(uri)
        self.compile_failed.pop(uri, None)
        for key in [k for k in self.llm_tasks if k[0] == uri]:
            self.llm_tasks.pop(key)[1].cancel()
        self.ws.forget(uri)
        event = self.analysed.pop(uri, None)
        if event is not None:
            event.set()  # release requests waiting for an analysis that will not come
        self.declined_shown.discard(uri)
        self.dirty.discard(uri)
        self.last_edit.pop(uri, None)
        self.cost_ms.pop(uri, None)

    # -- analysis -------------------------------------------------------------------------------
    def schedule(self, uri: str, delay_ms: int | None = None) -> None:
        """(Re-)analyse ``uri`` after ``delay_ms``, replacing a pending request. By default
        (an edit): at once when the document had no edit for the debounce time (the first
        keystroke after a pause), else after the debounce time (a burst of keystrokes is
        analysed once more after it ends)."""
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        if delay_ms is None:
            now = time.monotonic()
            last = self.last_edit.get(uri)
            self.last_edit[uri] = now
            # a document whose analysis is slow waits as long between analyses
            cost = min(self.cost_ms.get(uri, 0.0), MAX_PAUSE_MS)
            debounce = int(max(self.ws.config.debounce_ms, cost))
            quiet = last is None or (now - last) * 1000 >= debounce
            delay_ms = 0 if quiet else debounce
        self.pending[uri] = self.spawn(self._analyse_later(uri, delay_ms / 1000))

    async def _analyse_later(self, uri: str, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        if not self.config_ready.is_set():
            # the first analysis waits for the client's configuration (briefly)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.config_ready.wait(), CONFIG_WAIT_S)
        if self.pending.get(uri) is asyncio.current_task():
            del self.pending[uri]  # from here on a change no longer cancels this analysis
        if uri in self.analysing:
            # one analysis per document at a time: the running one re-runs when it is done,
            # so fast typing on a slow file never queues up a backlog
            self.dirty.add(uri)
            return
        self.analysing.add(uri)
        t0 = time.monotonic()
        try:
            await self.analyse(uri)
        finally:
            self.analysing.discard(uri)
        cost = (time.monotonic() - t0) * 1000
        if uri in self.ws.documents and cost > SLOW_JOB_MS:
            self.cost_ms[uri] = cost
        else:
            self.cost_ms.pop(uri, None)
        if uri in self.dirty:
            self.dirty.discard(uri)
            if uri in self.ws.documents and uri not in self.pending:
                # a slow analysis re-runs after as long a pause: the analysis thread holds
                # the GIL in C (tree-sitter) for long stretches, and requests need it too
                self.schedule(uri, int(min(self.cost_ms.get(uri, 0.0), MAX_PAUSE_MS)))

    async def analyse(self, uri: str) -> DocumentAnalysis | None:
        """Analyse ``uri`` now (in the worker thread) and install the result."""
        doc = self.ws.documents.get(uri)
        if doc is None:
            return None
        snap = doc.snapshot()
        cfg, gpus = self.ws.file_config(doc.path)
        doc.max_bytes = cfg.max_file_bytes
        declined = None
        if not doc.analysable_language:
            declined = f"language {doc.language_id!r} is not analysed"
        elif doc.too_large:
            declined = (
                f"{basename(doc.path)} is {len(doc.source) / 1e6:.1f} MB, over the "
                f"{cfg.max_file_bytes / 1e6:g} MB limit (roofline.maxFileBytes): not analysed"
            )
            if uri not in self.declined_shown:
                self.declined_shown.add(uri)
                self.frontend.show(f"roofline: {declined}", info=True)
        elif doc.long_line:
            declined = (
                f"{basename(doc.path)} has a line over {MAX_LINE_BYTES // 1024} kB "
                "(generated or minified code?): not analysed"
            )
            if uri not in self.declined_shown:
                self.declined_shown.add(uri)
                self.frontend.log(f"roofline: {declined}")
        elif doc.parse_problem is not None and snap.tree is None:
            declined = doc.parse_problem
            self.frontend.log(f"roofline: {declined}")
        if declined is None:
            self.declined_shown.discard(uri)  # said again if it is declined again
        if declined is not None or not doc.may_have_kernels:
            result = DocumentAnalysis(
                uri,
                snap.version,
                snap.seq,
                snap.source,
                snap.lines,
                None,
                gpus=gpus,
                declined=declined,
            )
        else:
            if snap.tree is None:  # became analysable without a re-parse (limit raised)
                doc.reparse()
                snap = doc.snapshot()
            last = self.ws.analyses.get(uri)
            previous = last.report if last is not None else None
            self.ws.advice_caches.setdefault(uri, {})
            await self.breathe()
            fut = self.in_worker(self.ws.analyse_snapshot, snap, previous)
            done, _ = await asyncio.wait({fut}, timeout=PROGRESS_AFTER_S)
            if done:
                result = fut.result()
            else:  # long work: tell the user
                token = await self.frontend.progress_begin(
                    f"roofline: analysing {basename(doc.path)}"
                )
                try:
                    result = await fut
                finally:
                    if token is not None:
                        self.frontend.progress_end(token)
        self.install(result)
        return result

    def install(self, result: DocumentAnalysis) -> None:
        """Make ``result`` the document's analysis (unless a newer one is there), publish its
        diagnostics, ask the client to fetch hints and lenses again when they changed, and
        start its PTX refinement and LLM requests."""
        before = self.ws.analyses.get(result.uri)
        installed = self.ws.install(result)
        if installed is None:
            return
        event = self.analysed.get(installed.uri)
        if event is not None:
            event.set()
        if views_of(before) != views_of(installed):
            self.frontend.refresh_views()
        doc = self.ws.documents[installed.uri]
        log.info(
            "analysed %s v%d in %.0f ms (%d kernels, %d advice)",
            basename(doc.path),
            installed.version,
            installed.elapsed_ms,
            len(installed.places),
            len(installed.advice),
        )
        if installed.seq == doc.seq:
            self.frontend.publish(installed)
            if not installed.ptx:
                self.start_compile(installed)
        self.start_llm(installed)

    async def breathe(self) -> None:
        """After a slow job (over :data:`SLOW_JOB_MS`), wait until the worker has rested as
        long as that job ran (at most :data:`MAX_PAUSE_MS`): tree-sitter holds the GIL while
        it parses, so a worker busy all the time would leave the event loop (requests,
        edits) short of it."""
        rest = self.worker_free_at - time.monotonic()
        if rest > 0:
            await asyncio.sleep(rest)

    def in_worker(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` in the analysis thread; its run time sets the next rest."""

        def timed() -> T:
            t0 = time.monotonic()
            try:
                return fn(*args)
            finally:
                ran = time.monotonic() - t0
                if ran * 1000 > SLOW_JOB_MS:
                    self.worker_free_at = time.monotonic() + min(ran, MAX_PAUSE_MS / 1000)

        return asyncio.get_running_loop().run_in_executor(self.pool, timed)

    async def fresh_analysis(self, uri: str) -> DocumentAnalysis | None:
        """The document's analysis, made now if it is missing or older than the text."""
        doc = self.ws.documents.get(uri)
        if doc is None:
            return None
        a = self.ws.analyses.get(uri)
        if a is None or a.seq != doc.seq:
            pending = self.pending.pop(uri, None)
            if pending is not None:
                pending.cancel()
            fresh = asyncio.ensure_future(self.analyse(uri))
            done, _ = await asyncio.wait({fresh}, timeout=FRESH_WAIT_S)
            if done:
                return fresh.result()
            # still at it: it installs itself when done; answer from the last analysis
            self.running.add(fresh)
            fresh.add_done_callback(self.running.discard)
            return self.ws.analyses.get(uri) or a
        return a

    def reanalyse_all(self, title: str) -> None:
        """Re-analyse every open document in the background (settings or GPU changed)."""
        uris = list(self.ws.documents)
        if not uris:
            self.frontend.refresh_views()
            return
        self.spawn(self.reanalyse(uris, title))

    async def reanalyse(self, uris: Sequence[str], title: str) -> None:
        """Re-analyse ``uris`` one after the other, reporting progress under ``title``."""
        token = await self.frontend.progress_begin(title)
        try:
            for i, uri in enumerate(uris):
                pending = self.pending.pop(uri, None)
                if pending is not None:
                    pending.cancel()
                await self.analyse(uri)
                if token is not None:
                    self.frontend.progress_report(
                        token, f"{i + 1}/{len(uris)}", 100 * (i + 1) // len(uris)
                    )
        finally:
            if token is not None:
                self.frontend.progress_end(token)
        self.frontend.refresh_views()

    # -- compiler (PTX) counts: refine the source-level verdicts in the background --------------
    def start_compile(self, a: DocumentAnalysis) -> None:
        """Compile the analysed text to PTX after a quiet moment and re-estimate its kernels
        with the compiler's counts; replaces a compile of an older text."""
        self.cancel_compile(a.uri)
        report = a.report
        if report is None or not report.kernels:
            return
        doc = self.ws.documents.get(a.uri)
        if doc is None:
            return
        cfg, _ = self.ws.file_config(doc.path)
        if not want_for([kr.kernel for kr in report.kernels], cfg.counts):
            return
        self.compiles[a.uri] = self.spawn(self._refine_with_ptx(a, report, doc.path))

    def cancel_compile(self, uri: str) -> None:
        """Drop the PTX refinement of ``uri`` (its text changed, or a newer analysis of it
        was installed): a running compiler process is killed."""
        task = self.compiles.pop(uri, None)
        if task is not None:
            task.cancel()

    async def _refine_with_ptx(self, a: DocumentAnalysis, report: FileReport, path: str) -> None:
        await asyncio.sleep(COMPILE_AFTER_S)
        t0 = time.perf_counter()
        counts = await self.ws.compile_counts(
            path, a.source, report.detection, semaphore=self.compile_slots
        )
        doc = self.ws.documents.get(a.uri)
        if isinstance(counts, str) or doc is None or doc.seq != a.seq:
            return
        if not any(c.ok for c in counts.values()):
            reason = next((c.reason for c in counts.values() if c.reason), "no PTX")
            if self.compile_failed.get(a.uri) != reason:  # once per reason, not per keystroke
                self.compile_failed[a.uri] = reason
                self.frontend.log(f"roofline: source counts for {basename(a.uri)}: {reason}")
            return
        self.compile_failed.pop(a.uri, None)
        snap = doc.snapshot()
        await self.breathe()
        result = await self.in_worker(self.ws.analyse_snapshot, snap, report, counts)
        if doc.seq != a.seq or self.ws.analyses.get(a.uri) is None:
            return
        log.info(
            "PTX counts for %s v%d after %.0f ms",
            basename(doc.path),
            result.version,
            (time.perf_counter() - t0) * 1000,
        )
        self.install(result)  # refreshes the views when a verdict changed

    # -- LLM ------------------------------------------------------------------------------------
    def llm_backend(self) -> LlmBackend | None:
        """The LLM backend when the configuration asks for one (None: static only)."""
        backend, problem = self.ws.llm_backend()
        if self.ws.has_retired:
            self.spawn(self.ws.close_retired())
        if problem is not None:
            self.frontend.config_problem("llm", f"roofline.llm: {problem}")
        return backend

    def start_llm(self, a: DocumentAnalysis) -> None:
        """One background request per kernel whose verdict the LLM may replace; a request
        for an older text of the kernel, or for a kernel gone, is cancelled."""
        live: set[LlmKey] = set()
        backend = self.llm_backend() if a.report is not None else None
        if backend is not None and a.report is not None:
            for p in a.places:
                v = p.kr.verdict
                key = (a.uri, p.kr.kernel.name, v.gpu)
                live.add(key)
                if not wants_llm(v):
                    continue  # measured, or already the LLM's
                running = self.llm_tasks.get(key)
                if running is not None and running[0] == p.text_hash:
                    continue
                if running is not None:
                    running[1].cancel()
                task = self.spawn(self._llm_request(backend, key, p, a))
                self.llm_tasks[key] = (p.text_hash, task)
        for key in [k for k in self.llm_tasks if k[0] == a.uri and k not in live]:
            self.llm_tasks.pop(key)[1].cancel()

    async def _llm_request(
        self, backend: LlmBackend, key: LlmKey, p: KernelPlace, a: DocumentAnalysis
    ) -> None:
        assert a.report is not None
        token = await self.frontend.progress_begin(
            f"roofline: asking the LLM about {p.kr.kernel.name}"
        )
        try:
            launches = a.report.detection.launches_of(p.kr.kernel)
            verdict = await backend.verdict(
                p.kr.kernel,
                a.report.detection,
                a.gpus[0],
                static=p.kr.verdict,
                measured=None,
                launch=launches[0] if launches else None,
            )
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self.frontend.log(f"roofline: LLM request for {p.kr.kernel.name} failed: {one_line(e)}")
            if self.ws.config.backend == "llm" and not self.llm_failed_shown:
                self.llm_failed_shown = True
                self.frontend.show(
                    f"roofline: the LLM backend failed ({one_line(e)}); showing static verdicts"
                )
            return
        finally:
            if token is not None:
                self.frontend.progress_end(token)
            cur = self.llm_tasks.get(key)
            if cur is not None and cur[1] is asyncio.current_task():
                del self.llm_tasks[key]
        self.ws.remember_llm_verdict(key, p.text_hash, verdict)
        current = self.ws.analyses.get(a.uri)
        if current is None:
            return
        updated = self.ws.with_llm_verdicts(current)
        if updated is current:
            return
        self.ws.analyses[a.uri] = updated
        doc = self.ws.documents.get(a.uri)
        if doc is not None and updated.seq == doc.seq:
            self.frontend.publish(updated)
        self.frontend.refresh_views()

    # -- shutdown -------------------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Cancel every analysis, compile and LLM request (a compiler process is killed as
        its task unwinds, given :data:`EXIT_GRACE_S`); close the LLM connections. A running
        analysis thread is not waited for: the process exits without it."""
        tasks = [
            *self.pending.values(),
            *self.compiles.values(),
            *[t for _h, t in self.llm_tasks.values()],
            *[t for t in self.running if t is not asyncio.current_task()],
        ]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=EXIT_GRACE_S)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ws.aclose(), EXIT_GRACE_S)
        self.pool.shutdown(wait=False, cancel_futures=True)


def views_of(a: DocumentAnalysis | None) -> tuple[object, ...]:
    """What inlay hints and code lenses show of an analysis: each kernel's name and verdicts
    (where they are is the client's to track between edits)."""
    if a is None or a.report is None:
        return ()
    return tuple((p.kr.kernel.name, p.kr.verdicts) for p in a.places)


def basename(path: str) -> str:
    """The last part of a path or URI (for messages)."""
    return path.rstrip("/").rsplit("/", 1)[-1]
