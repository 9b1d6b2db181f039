"""engine/scheduler.py with a fake frontend: debounce, one analysis at a time, cancellation on
edit, LLM requests deduplicated and cancelled, shutdown."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import Any

from lsp_helpers import FIXTURES

from roofline_lsp.engine.documents import Change
from roofline_lsp.engine.scheduler import Scheduler
from roofline_lsp.engine.workspace import DocumentAnalysis, Workspace
from roofline_lsp.model.config import Config


@dataclass
class FakeFrontend:
    published: list[tuple[str, int]] = field(default_factory=list)
    refreshes: int = 0
    logs: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def publish(self, analysis: DocumentAnalysis) -> None:
        self.published.append((analysis.uri, analysis.version))
        self.event.set()

    def refresh_views(self) -> None:
        self.refreshes += 1

    def log(self, text: str) -> None:
        self.logs.append(text)

    def show(self, text: str, info: bool = False) -> None:
        self.shown.append(text)

    def config_problem(self, key: str, text: str) -> None:
        self.problems.append((key, text))

    async def progress_begin(self, title: str) -> str | None:
        self.progress.append(title)
        return None

    def progress_report(self, token: str, message: str, pct: int | None = None) -> None:
        pass

    def progress_end(self, token: str) -> None:
        pass


URI = (FIXTURES / "kernels.cu").as_uri()
TEXT = (FIXTURES / "kernels.cu").read_text(encoding="utf-8")


def _scheduler(**config: Any) -> tuple[Scheduler, FakeFrontend]:
    cfg = replace(Config(), counts="source", **config)  # no compiler in these tests
    front = FakeFrontend()
    sched = Scheduler(Workspace(cfg), front)
    sched.config_ready.set()
    return sched, front


async def _settle(sched: Scheduler) -> None:
    """Wait until no analysis is pending or running."""
    for _ in range(500):
        await asyncio.sleep(0.01)
        if not sched.pending and not sched.analysing:
            return
    raise AssertionError("analyses did not settle")


def _edit(sched: Scheduler, version: int) -> None:
    # append a comment at the very start: the kernels' text does not change
    sched.change(URI, [Change("// x\n", ((0, 0), (0, 0)))], version, "utf-16")


async def test_open_analyses_at_once_and_publishes() -> None:
    sched, front = _scheduler()
    sched.open(URI, TEXT, 1, "cuda-cpp")
    await _settle(sched)
    assert front.published == [(URI, 1)]
    a = sched.ws.analyses[URI]
    assert a.report is not None and len(a.places) == 2
    await sched.shutdown()


async def test_a_request_right_after_open_waits_for_the_first_analysis() -> None:
    sched, front = _scheduler()
    sched.open(URI, TEXT, 1, "cuda-cpp")
    assert URI not in sched.ws.analyses
    await sched.first_analysis(URI)  # what hover, hints and lenses await before answering
    assert sched.ws.analyses[URI].report is not None
    # the first analysis changed what hints and lenses show: the client is asked to refetch
    assert front.refreshes == 1
    # once there, no wait; an unknown document does not wait either
    t0 = time.monotonic()
    await sched.first_analysis(URI)
    await sched.first_analysis("file:///nowhere.cu")
    assert time.monotonic() - t0 < 0.05
    await sched.shutdown()


async def test_the_wait_is_bounded_and_released_by_close() -> None:
    sched, _front = _scheduler()
    sched.config_ready.clear()  # the analysis waits for settings that do not come
    sched.open(URI, TEXT, 1, "cuda-cpp")
    t0 = time.monotonic()
    await sched.first_analysis(URI, timeout=0.2)
    assert 0.15 < time.monotonic() - t0 < 1.0 and URI not in sched.ws.analyses
    waiter = asyncio.ensure_future(sched.first_analysis(URI, timeout=5))
    await asyncio.sleep(0.01)
    sched.close(URI)
    await asyncio.wait_for(waiter, 0.5)
    await sched.shutdown()


async def test_views_refresh_only_when_a_verdict_changed() -> None:
    sched, front = _scheduler(debounce_ms=0)
    sched.open(URI, TEXT, 1, "cuda-cpp")
    await _settle(sched)
    assert front.refreshes == 1
    _edit(sched, 2)  # a comment above the kernels: same verdicts, no refresh
    await _settle(sched)
    assert sched.ws.analyses[URI].version == 2 and front.refreshes == 1
    # the fp64 literal becomes fp32: scale_add's verdict changes, the views refresh
    doc = sched.ws.documents[URI]
    text = doc.source.decode()
    line, col = next(
        (i, ln.index("+ 0.5") + 2) for i, ln in enumerate(text.splitlines()) if "+ 0.5" in ln
    )
    edit = Change("0.5f * x[i] * x[i]", ((line, col), (line, col + 3)))
    sched.change(URI, [edit], 3, "utf-32")  # columns in code points, as str.index gives
    assert "+ 0.5f * x[i] * x[i]);" in doc.source.decode()
    await _settle(sched)
    assert sched.ws.analyses[URI].version == 3 and front.refreshes == 2
    await sched.shutdown()


async def test_a_burst_of_edits_is_coalesced() -> None:
    sched, front = _scheduler(debounce_ms=200)
    sched.open(URI, TEXT, 1, "cuda-cpp")
    await _settle(sched)
    await asyncio.sleep(0.25)  # a pause: the next edit is analysed at once (leading edge)
    for v in range(2, 8):
        _edit(sched, v)
    await _settle(sched)
    versions = [v for _u, v in front.published]
    # the first edit after the pause, then the last of the burst; nothing in between
    assert versions[0] == 1 and versions[-1] == 7
    assert len(versions) <= 3, versions
    assert sched.ws.analyses[URI].version == 7
    await sched.shutdown()


async def test_edits_during_a_slow_analysis_re_run_it_once_with_progress() -> None:
    sched, front = _scheduler(debounce_ms=0)
    analyse = sched.ws.analyse_snapshot

    calls: list[int] = []

    def slow(*args: Any) -> DocumentAnalysis:
        calls.append(1)
        time.sleep(0.6)  # over PROGRESS_AFTER_S: the analysis reports progress
        return analyse(*args)

    sched.ws.analyse_snapshot = slow  # type: ignore[method-assign]
    sched.open(URI, TEXT, 1, "cuda-cpp")
    await asyncio.sleep(0.1)
    assert URI in sched.analysing
    for v in range(2, 6):  # while the first analysis runs: no backlog, one re-run
        _edit(sched, v)
        await asyncio.sleep(0.01)
    assert URI in sched.dirty
    await _settle(sched)
    # two analyses; the first one's result, stale when it arrives, is not published
    assert len(calls) == 2 and front.published == [(URI, 5)]
    assert front.progress == ["roofline: analysing kernels.cu"] * 2
    await sched.shutdown()


async def test_an_edit_cancels_the_compile_and_the_pending_analysis() -> None:
    sched, front = _scheduler(debounce_ms=10_000)
    sched.open(URI, TEXT, 1, "cuda-cpp")
    await _settle(sched)
    compile_task = asyncio.ensure_future(asyncio.sleep(60))
    sched.compiles[URI] = compile_task
    _edit(sched, 2)  # leading edge: analysed at once
    _edit(sched, 3)  # within the debounce time: pending for 10 s
    await asyncio.sleep(0)
    assert compile_task.cancelled() or compile_task.cancelling()
    pending = sched.pending[URI]
    _edit(sched, 4)  # replaces the pending analysis
    await asyncio.sleep(0)
    assert pending.cancelled() and sched.pending[URI] is not pending
    sched.forget(URI)
    assert URI not in sched.pending and URI not in sched.ws.documents
    await sched.shutdown()


class FakeLlm:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.release = asyncio.Event()
        self.cancelled: list[str] = []

    async def verdict(self, kernel: Any, detection: Any, gpu: Any, **kw: Any) -> Any:
        self.calls.append(kernel.name)
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.append(kernel.name)
            raise
        return replace(kw["static"], source="llm", rationale="the LLM says so")


async def test_llm_requests_are_deduplicated_and_cancelled_on_edit() -> None:
    sched, front = _scheduler(backend="llm")
    llm = FakeLlm()
    sched.llm_backend = lambda: llm  # type: ignore[assignment, return-value]
    sched.open(URI, TEXT, 1, "cuda-cpp")
    await _settle(sched)
    await asyncio.sleep(0.01)
    assert sorted(llm.calls) == ["scale_add", "square_all"]
    # the same kernel text again: no new request
    _edit(sched, 2)
    await _settle(sched)
    await asyncio.sleep(0.01)
    assert len(llm.calls) == 2 and len(sched.llm_tasks) == 2
    # change the body of scale_add: its request is replaced, the other one stays
    at = TEXT.index("y[i] = a * (x[i]")
    line = TEXT.count("\n", 0, at) + 1  # one comment line was added by _edit
    sched.change(URI, [Change("  ", ((line, 0), (line, 0)))], 3, "utf-16")
    await _settle(sched)
    await asyncio.sleep(0.01)
    assert llm.cancelled == ["scale_add"] and llm.calls.count("scale_add") == 2
    llm.release.set()
    for _ in range(100):
        await asyncio.sleep(0.01)
        if not sched.llm_tasks:
            break
    a = sched.ws.analyses[URI]
    assert {p.kr.verdict.source for p in a.places} == {"llm"}
    assert front.refreshes >= 1
    await sched.shutdown()


async def test_shutdown_cancels_everything() -> None:
    sched, _front = _scheduler(debounce_ms=10_000)
    sched.open(URI, TEXT, 1, "cuda-cpp")
    await _settle(sched)
    _edit(sched, 2)
    _edit(sched, 3)
    pending = sched.pending[URI]
    await sched.shutdown()
    await asyncio.sleep(0)
    assert pending.cancelled()


async def test_an_unsaved_header_edit_reanalyses_the_file_that_includes_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # the block size comes from the header: 256 threads (a 16 x 16 tile) on disk, 1024 in
    # the editor's unsaved buffer; the kernel's verdict must follow the buffer, then the disk
    # again when the header is closed without saving
    header = tmp_path / "tile.h"
    header.write_text("#define TILE 16\n")
    src = tmp_path / "k.cu"
    src.write_text(
        '#include "tile.h"\n'
        "__global__ void k(float *x) { x[threadIdx.x + threadIdx.y * TILE] *= 2.0f; }\n"
        "void run(float *x) { k<<<64, dim3(TILE, TILE)>>>(x); }\n"
    )
    sched, _front = _scheduler(debounce_ms=10)

    def threads() -> float | None:
        a = sched.ws.analyses[src.as_uri()]
        assert a.report is not None
        counts = a.report.kernels[0].verdict.counts
        return counts.threads if counts is not None else None

    sched.open(src.as_uri(), src.read_text(), 1, "cuda")
    await _settle(sched)
    assert threads() == 64 * 16 * 16
    sched.open(header.as_uri(), header.read_text(), 1, "c")
    sched.change(header.as_uri(), [Change("#define TILE 32\n")], 2, "utf-16")
    await _settle(sched)
    assert threads() == 64 * 32 * 32
    sched.close(header.as_uri())
    await _settle(sched)
    assert threads() == 64 * 16 * 16
    await sched.shutdown()


async def test_a_document_with_a_huge_line_is_declined_with_one_log_line() -> None:
    sched, front = _scheduler()
    sched.open(URI, TEXT, 1, "cuda-cpp")
    await _settle(sched)
    line = "k<<<1, 1>>>(a); #if x " * 8000  # 176 kB on one line
    sched.change(URI, [Change(line + "\n", ((0, 0), (0, 0)))], 2, "utf-16")
    await _settle(sched)
    sched.change(URI, [Change("y", ((0, 0), (0, 0)))], 3, "utf-16")
    await _settle(sched)
    a = sched.ws.analyses[URI]
    assert a.report is None and a.declined is not None and "line over" in a.declined
    assert sum("line over" in text for text in front.logs) == 1  # once, not per edit
    sched.change(URI, [Change("", ((0, 0), (1, 0)))], 4, "utf-16")  # deleted: analysed again
    await _settle(sched)
    assert sched.ws.analyses[URI].report is not None
    await sched.shutdown()


async def test_a_fresh_analysis_for_a_command_is_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import roofline_lsp.engine.scheduler as scheduler

    sched, _front = _scheduler()
    sched.open(URI, TEXT, 1, "cuda-cpp")
    await _settle(sched)
    before = sched.ws.analyses[URI]
    slow = sched.ws.analyse_snapshot

    def analyse_slowly(*args: Any) -> DocumentAnalysis:
        time.sleep(0.5)
        return slow(*args)

    monkeypatch.setattr(sched.ws, "analyse_snapshot", analyse_slowly)
    monkeypatch.setattr(scheduler, "FRESH_WAIT_S", 0.1)
    _edit(sched, 2)
    t0 = time.monotonic()
    a = await sched.fresh_analysis(URI)
    assert time.monotonic() - t0 < 0.45  # the last analysis, not a wait for the new one
    assert a is before
    await _settle(sched)
    await sched.shutdown()
