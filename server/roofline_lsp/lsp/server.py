"""The language server: hover, inlay hints, code lens, diagnostics with advice, code actions.

Thin handlers: each one fetches state from :class:`RooflineServer`, calls the pure modules
(``documents``, ``analysis``, ``advice``, ``report``) and converts positions with ``text.py``.
Analysis of a changed document is debounced (``debounceMs``) and runs in a worker thread on a
snapshot (bytes + a copy of the tree); hover, inlay hints and code lenses answer from the
last analysis, its byte offsets mapped through the edits made since. LLM verdicts (backend
``llm``/``auto``) are background tasks per (document, kernel, GPU) that replace the static
verdict when they answer.

``roofline-lsp serve`` calls :func:`main_serve`; ``python -m roofline_lsp serve`` works too.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import inspect
import ipaddress
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from roofline_lsp import __version__
from roofline_lsp.advice.rules import Advice, AdviceCache, advise
from roofline_lsp.compiler.compiled import DEFAULT_JOBS as COMPILE_JOBS
from roofline_lsp.compiler.compiled import (
    CompiledCounts,
    compiled_counts_for_file,
    default_cache,
    want_for,
)
from roofline_lsp.engine.analysis import FileReport, KernelReport, analyze_file
from roofline_lsp.engine.documents import Change, Document, uri_to_path
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import GpuProfile, GpuRegistry, UnknownGpuError, load_registry, to_json
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.present.markdown import (
    explain_markdown,
    file_report_markdown,
    hover_markdown,
    inlay_label,
    launch_hover_markdown,
    lens_title,
)
from roofline_lsp.syntax.positions import Encoding, LineIndex

log = logging.getLogger("roofline_lsp.server")

CONFIG_SECTION = "roofline"
CMD_LIST_GPUS = "roofline.listGpus"
CMD_SELECT_GPU = "roofline.selectGpu"
CMD_REANALYZE = "roofline.reanalyze"
CMD_REPORT = "roofline.report"
CMD_EXPLAIN = "roofline.explainKernel"
COMMANDS = (CMD_LIST_GPUS, CMD_SELECT_GPU, CMD_REANALYZE, CMD_REPORT, CMD_EXPLAIN)
PROGRESS_AFTER_S = 0.5  # an analysis running longer than this reports $/progress
COMPILE_AFTER_S = 0.3  # quiet time after an analysis before compiling it to PTX
SEVERITY = {"information": lsp.DiagnosticSeverity.Information, "hint": lsp.DiagnosticSeverity.Hint}

T = TypeVar("T")


# --------------------------------------------------------------------------------------------
# State
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelPlace:
    """Byte offsets (in the analysed snapshot) where a kernel's features are shown."""

    kr: KernelReport
    start: int  # the whole kernel
    end: int
    name_start: int
    name_end: int
    hint_at: int  # inlay hint: after the signature / at the end of the pragma line
    text_hash: str  # of the kernel's text, to know when an LLM answer is out of date


@dataclass(frozen=True)
class Analysis:
    """The last analysis of one document: what hover, hints, lenses and fixes answer from."""

    uri: str
    version: int
    seq: int  # document edit count when the snapshot was taken
    source: bytes
    lines: LineIndex
    report: FileReport | None
    advice: tuple[Advice, ...] = ()
    places: tuple[KernelPlace, ...] = ()
    gpus: tuple[GpuProfile, ...] = ()
    declined: str | None = None  # why the document was not analysed
    elapsed_ms: float = 0.0
    ptx: bool = False  # verdicts refined with the compiler's PTX counts (compiled.py)


@dataclass
class ServerState:
    """Everything the server knows; mutated on the event loop thread only."""

    documents: dict[str, Document] = field(default_factory=dict)
    analyses: dict[str, Analysis] = field(default_factory=dict)
    # per document: advice of unchanged kernels, reused by the next analysis (advice.advise)
    advice_caches: dict[str, AdviceCache] = field(default_factory=dict)
    pending: dict[str, asyncio.Task[None]] = field(default_factory=dict)  # debounced analyses
    running: set[asyncio.Task[Any]] = field(default_factory=set)
    llm_tasks: dict[tuple[str, str, str], tuple[str, asyncio.Task[None]]] = field(
        default_factory=dict
    )
    llm_verdicts: dict[tuple[str, str, str], tuple[str, Verdict]] = field(default_factory=dict)
    llm_failed_shown: bool = False
    init_options: Any = None
    base_config: Config = field(default_factory=Config)
    config: Config = field(default_factory=Config)
    gpu_override: str | None = None
    shown_errors: dict[str, str] = field(default_factory=dict)  # key -> last message shown
    declined_shown: set[str] = field(default_factory=set)
    published: set[str] = field(default_factory=set)  # uris with non-empty diagnostics
    measured: Any = None
    measured_key: tuple[str, int] | None = None
    llm: Any = None  # LlmBackend
    llm_config: Any = None
    progress_tokens: int = 0
    config_ready: asyncio.Event = field(default_factory=asyncio.Event)
    analysing: set[str] = field(default_factory=set)  # uris with a debounced analysis running
    dirty: set[str] = field(default_factory=set)  # changed while being analysed
    last_edit: dict[str, float] = field(default_factory=dict)  # uri -> time.monotonic()
    compiles: dict[str, asyncio.Task[None]] = field(default_factory=dict)  # PTX refinements
    compile_slots: asyncio.Semaphore = field(
        default_factory=lambda: asyncio.Semaphore(COMPILE_JOBS)
    )
    ptx_cache: Any = None  # ResultCache of compiles (compiled.default_cache)
    compile_failed: dict[str, str] = field(default_factory=dict)  # uri -> reason logged


# --------------------------------------------------------------------------------------------
# Protocol: the server keeps its own documents (bytes + tree), not pygls' string copies
# --------------------------------------------------------------------------------------------


class RooflineProtocol(LanguageServerProtocol):
    """Document sync goes to our handlers only: pygls' workspace would keep a second copy of
    every document (and re-split a 20 MB one on each keystroke)."""

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: lsp.DidOpenTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: lsp.DidCloseTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


class RooflineServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "roofline-lsp",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            protocol_cls=RooflineProtocol,
        )
        self.state = ServerState()
        self.analysis_pool = ThreadPoolExecutor(1, thread_name_prefix="roofline-analysis")

    # -- client facts ---------------------------------------------------------------------------
    @property
    def encoding(self) -> Encoding:
        try:
            enc = self.server_capabilities.position_encoding
        except Exception:
            return "utf-16"
        return cast(Encoding, str(enc)) if str(enc) in ("utf-8", "utf-32") else "utf-16"

    def _cap(self, path: str) -> bool:
        obj: Any = self.client_capabilities
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return False
        return bool(obj)

    # -- messages -------------------------------------------------------------------------------
    def message(self, text: str, kind: lsp.MessageType = lsp.MessageType.Warning) -> None:
        with contextlib.suppress(Exception):
            self.window_show_message(lsp.ShowMessageParams(type=kind, message=text))

    def logmsg(self, text: str, kind: lsp.MessageType = lsp.MessageType.Log) -> None:
        log.info("%s", text)
        with contextlib.suppress(Exception):
            self.window_log_message(lsp.LogMessageParams(type=kind, message=text))

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Malformed or unknown messages: log, never pop up or stop.
        log.warning("protocol error (%s): %s", getattr(source, "__name__", source), error)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """A tracked background task whose failure is logged, never raised."""
        task = asyncio.ensure_future(coro)
        self.state.running.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self.state.running.discard(t)
            if not t.cancelled() and t.exception() is not None:
                exc = t.exception()
                log.error("background task failed: %r", exc, exc_info=exc)

        task.add_done_callback(done)
        return task

    # -- configuration --------------------------------------------------------------------------
    def show_config_error(self, key: str, text: str) -> None:
        if self.state.shown_errors.get(key) == text:
            return
        self.state.shown_errors[key] = text
        self.message(f"{text} (keeping the last valid value)")

    def registry(self, cfg: Config | None = None) -> GpuRegistry:
        return load_registry((cfg or self.state.config).gpu_profiles)

    def apply_settings(self, settings: Any) -> bool:
        """Make ``settings`` (the ``roofline`` section; None: nothing set) the configuration
        on top of ``initializationOptions``. Invalid keys keep their last valid value and are
        shown once each. Returns whether anything changed."""
        st = self.state
        old = st.config
        if settings is not None and not isinstance(settings, dict):
            self.show_config_error("", f"roofline: settings must be an object, got {settings!r}")
            return False
        new, errors = st.base_config.merged(settings or {})
        bad: set[str] = set()
        for err in errors:
            bad.add(err.key)
            self.show_config_error(err.key, str(err))
            new = _restore(new, old, err.key)
        new = self.validated(new, old, bad)
        for key in list(st.shown_errors):
            if key not in bad:
                del st.shown_errors[key]
        st.config = new
        if new.gpu != old.gpu or new.gpu_profiles != old.gpu_profiles:
            st.gpu_override = None
        return new != old

    def validated(self, new: Config, old: Config, bad: set[str]) -> Config:
        """GPU names, the GPU-profile file and the profile path checked against what exists."""
        try:
            reg = load_registry(new.gpu_profiles)
        except Exception as e:
            bad.add("gpuProfiles")
            self.show_config_error("gpuProfiles", f"roofline.gpuProfiles: {_one_line(e)}")
            new = replace(new, gpu_profiles=old.gpu_profiles)
            reg = load_registry(new.gpu_profiles)
        try:
            reg.get(new.gpu)
        except UnknownGpuError as e:
            bad.add("gpu")
            self.show_config_error("gpu", f"roofline.gpu: {_one_line(e)}")
            new = replace(new, gpu=old.gpu if _known(reg, old.gpu) else Config().gpu)
        unknown = [g for g in new.compare_gpus if not _known(reg, g)]
        if unknown:
            bad.add("compareGpus")
            self.show_config_error(
                "compareGpus", f"roofline.compareGpus: unknown GPU {', '.join(unknown)}"
            )
            new = replace(new, compare_gpus=tuple(g for g in new.compare_gpus if _known(reg, g)))
        if new.profile and not self.load_measured(new.profile):
            bad.add("profile")
            new = replace(new, profile=old.profile)
        return new

    def load_measured(self, path: str) -> bool:
        """Load the measured profile at ``path``; False (and one message) when it fails."""
        st = self.state
        try:
            key = (path, os.stat(path).st_mtime_ns)
        except OSError as e:
            self.show_config_error("profile", f"roofline.profile: {path}: {e.strerror or e}")
            return False
        if st.measured_key == key:
            return True
        try:
            from roofline_lsp.measured.ncu import load_profile  # type: ignore[import-not-found, unused-ignore]

            st.measured = load_profile(path)
            st.measured_key = key
            return True
        except ImportError:
            self.show_config_error("profile", "roofline.profile: measured profiles unsupported")
        except Exception as e:
            self.show_config_error("profile", f"roofline.profile: {_one_line(e)}")
        return False

    def file_config(self, path: str) -> tuple[Config, tuple[GpuProfile, ...]]:
        """The configuration for one file (per-glob overrides) and its GPUs, target first."""
        st = self.state
        cfg = st.config.for_file(path) if st.config.overrides else st.config
        reg = self.registry(st.config)
        names = list(cfg.gpus)
        if st.gpu_override:
            names = [st.gpu_override, *st.config.compare_gpus]
        gpus: list[GpuProfile] = []
        for n in names:
            try:
                g = reg.get(n)
            except UnknownGpuError:
                continue  # an override with an unknown GPU: fall back to the others
            if g.name not in (x.name for x in gpus):
                gpus.append(g)
        if not gpus:
            gpus.append(reg.get(st.config.gpu))
        return cfg, tuple(gpus)

    # -- analysis -------------------------------------------------------------------------------
    def schedule(self, uri: str, delay_ms: int | None = None) -> None:
        """(Re-)analyse ``uri`` after ``delay_ms``, replacing a pending request. By default
        (an edit): at once when the document had no edit for the debounce time (the first
        keystroke after a pause), else after the debounce time (a burst of keystrokes is
        analysed once more after it ends)."""
        st = self.state
        old = st.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        if delay_ms is None:
            now = time.monotonic()
            last = st.last_edit.get(uri)
            st.last_edit[uri] = now
            quiet = last is None or (now - last) * 1000 >= st.config.debounce_ms
            delay_ms = 0 if quiet else st.config.debounce_ms
        st.pending[uri] = self.spawn(self._analyse_later(uri, delay_ms / 1000))

    async def _analyse_later(self, uri: str, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        if not self.state.config_ready.is_set():
            # the first analysis waits for the client's configuration (briefly)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.state.config_ready.wait(), 5)
        st = self.state
        if st.pending.get(uri) is asyncio.current_task():
            del st.pending[uri]  # from here on a change no longer cancels this analysis
        if uri in st.analysing:
            # one analysis per document at a time: the running one re-runs when it is done,
            # so fast typing on a slow file never queues up a backlog
            st.dirty.add(uri)
            return
        st.analysing.add(uri)
        try:
            await self.analyse(uri)
        finally:
            st.analysing.discard(uri)
        if uri in st.dirty:
            st.dirty.discard(uri)
            if uri in st.documents and uri not in st.pending:
                self.schedule(uri, 0)

    async def analyse(self, uri: str) -> Analysis | None:
        st = self.state
        doc = st.documents.get(uri)
        if doc is None:
            return None
        snap = doc.snapshot()
        cfg, gpus = self.file_config(doc.path)
        doc.max_bytes = cfg.max_file_bytes
        declined = None
        if not doc.analysable_language:
            declined = f"language {doc.language_id!r} is not analysed"
        elif doc.too_large:
            declined = (
                f"{_basename(doc.path)} is {len(doc.source) / 1e6:.1f} MB, over the "
                f"{cfg.max_file_bytes / 1e6:g} MB limit (roofline.maxFileBytes): not analysed"
            )
            if uri not in st.declined_shown:
                st.declined_shown.add(uri)
                self.message(f"roofline: {declined}", lsp.MessageType.Info)
        if declined is not None or not doc.may_have_kernels:
            result = Analysis(
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
            measured = st.measured if cfg.profile else None
            loop = asyncio.get_running_loop()
            last = st.analyses.get(uri)
            previous = last.report if last is not None else None
            work = functools.partial(
                _analyse_snapshot,
                snap,
                gpus,
                cfg,
                measured,
                previous,
                st.advice_caches.setdefault(uri, {}),
            )
            fut = loop.run_in_executor(self.analysis_pool, work)
            done, _ = await asyncio.wait({fut}, timeout=PROGRESS_AFTER_S)
            if done:
                result = fut.result()
            else:  # long work: tell the user
                token = await self.progress_begin(f"roofline: analysing {_basename(doc.path)}")
                try:
                    result = await fut
                finally:
                    if token is not None:
                        self.progress_end(token)
        self.install(result)
        return result

    def install(self, result: Analysis) -> None:
        """Make ``result`` the document's analysis (unless a newer one is there), merge LLM
        verdicts, publish diagnostics and start LLM requests."""
        st = self.state
        doc = st.documents.get(result.uri)
        if doc is None:
            return
        prev = st.analyses.get(result.uri)
        if prev is not None and prev.seq > result.seq:
            return
        log.info(
            "analysed %s v%d in %.0f ms (%d kernels, %d advice)",
            _basename(doc.path),
            result.version,
            result.elapsed_ms,
            len(result.places),
            len(result.advice),
        )
        result = self.with_llm_verdicts(result)
        st.analyses[result.uri] = result
        doc.forget_edits_before(result.seq)
        if result.seq == doc.seq:
            self.publish(result)
            if not result.ptx:
                self.start_compile(result)
        self.start_llm(result)

    def publish(self, a: Analysis) -> None:
        st = self.state
        diags = [self.diagnostic(a, adv) for adv in a.advice]
        if a.report is None and a.uri not in st.published:
            return  # a file without kernels: nothing to say, nothing to clear
        if diags:
            st.published.add(a.uri)
        else:
            st.published.discard(a.uri)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=a.uri, diagnostics=diags, version=a.version)
        )

    def diagnostic(self, a: Analysis, adv: Advice) -> lsp.Diagnostic:
        rule = adv.rule
        return lsp.Diagnostic(
            range=_range(a.lines, adv.start, adv.end, self.encoding),
            message=adv.message,
            severity=SEVERITY[adv.severity],
            code=rule.code,
            code_description=lsp.CodeDescription(href=rule.href),
            source="roofline",
            data={"rule": rule.slug, "kernel": adv.kernel, "fix": adv.fix is not None},
        )

    # -- compiler (PTX) counts: refine the source-level verdicts in the background --------------
    def start_compile(self, a: Analysis) -> None:
        """Compile the analysed text to PTX after a quiet moment and re-estimate its kernels
        with the compiler's counts (``compiled.py``); replaces a compile of an older text."""
        self.cancel_compile(a.uri)
        report = a.report
        if report is None or not report.kernels:
            return
        cfg, gpus = self.file_config(uri_to_path(a.uri))
        if not want_for([kr.kernel for kr in report.kernels], cfg.counts):
            return
        self.state.compiles[a.uri] = self.spawn(self._refine_with_ptx(a, report, cfg, gpus))

    def cancel_compile(self, uri: str) -> None:
        """Drop the PTX refinement of ``uri`` (its text changed, or a newer analysis of it
        was installed): a running compiler process is killed."""
        task = self.state.compiles.pop(uri, None)
        if task is not None:
            task.cancel()

    async def _refine_with_ptx(
        self, a: Analysis, report: FileReport, cfg: Config, gpus: tuple[GpuProfile, ...]
    ) -> None:
        st = self.state
        await asyncio.sleep(COMPILE_AFTER_S)
        if st.ptx_cache is None:
            st.ptx_cache = default_cache(cfg)
        t0 = time.perf_counter()
        counts = await compiled_counts_for_file(
            uri_to_path(a.uri),
            a.source,
            report.detection,
            gpus[0],
            cfg,
            cache=st.ptx_cache,
            semaphore=st.compile_slots,
        )
        doc = st.documents.get(a.uri)
        if isinstance(counts, str) or doc is None or doc.seq != a.seq:
            return
        if not any(c.ok for c in counts.values()):
            reason = next((c.reason for c in counts.values() if c.reason), "no PTX")
            if st.compile_failed.get(a.uri) != reason:  # once per reason, not per keystroke
                st.compile_failed[a.uri] = reason
                self.logmsg(f"roofline: source counts for {_basename(a.uri)}: {reason}")
            return
        st.compile_failed.pop(a.uri, None)
        snap = doc.snapshot()
        measured = st.measured if cfg.profile else None
        work = functools.partial(
            _analyse_snapshot,
            snap,
            a.gpus,
            cfg,
            measured,
            report,
            st.advice_caches.setdefault(a.uri, {}),
            counts,
        )
        result = await asyncio.get_running_loop().run_in_executor(self.analysis_pool, work)
        if doc.seq != a.seq or st.analyses.get(a.uri) is None:
            return
        log.info(
            "PTX counts for %s v%d after %.0f ms",
            _basename(doc.path),
            result.version,
            (time.perf_counter() - t0) * 1000,
        )
        self.install(result)
        self.refresh_views()

    def reanalyse_all(self, title: str) -> None:
        uris = list(self.state.documents)
        if not uris:
            self.refresh_views()
            return
        self.spawn(self._reanalyse(uris, title))

    async def _reanalyse(self, uris: list[str], title: str) -> None:
        token = await self.progress_begin(title)
        try:
            for i, uri in enumerate(uris):
                pending = self.state.pending.pop(uri, None)
                if pending is not None:
                    pending.cancel()
                await self.analyse(uri)
                if token is not None:
                    self.progress_report(token, f"{i + 1}/{len(uris)}", 100 * (i + 1) // len(uris))
        finally:
            if token is not None:
                self.progress_end(token)
        self.refresh_views()

    def refresh_views(self) -> None:
        if self._cap("workspace.inlay_hint.refresh_support"):
            self.spawn(_quiet(self.workspace_inlay_hint_refresh_async(None)))
        if self._cap("workspace.code_lens.refresh_support"):
            self.spawn(_quiet(self.workspace_code_lens_refresh_async(None)))

    # -- $/progress -----------------------------------------------------------------------------
    async def progress_begin(self, title: str, wanted: bool = True) -> str | None:
        if not wanted or not self._cap("window.work_done_progress"):
            return None
        self.state.progress_tokens += 1
        token = f"roofline-{self.state.progress_tokens}-{uuid.uuid4().hex[:8]}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 5)
        except Exception:
            return None
        self.work_done_progress.begin(
            token, lsp.WorkDoneProgressBegin(title=title, cancellable=False, percentage=0)
        )
        return token

    def progress_report(self, token: str, message: str, pct: int | None = None) -> None:
        with contextlib.suppress(Exception):
            self.work_done_progress.report(
                token, lsp.WorkDoneProgressReport(message=message, percentage=pct)
            )

    def progress_end(self, token: str, message: str | None = None) -> None:
        with contextlib.suppress(Exception):
            self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=message))

    # -- LLM ------------------------------------------------------------------------------------
    def llm_backend(self) -> Any:
        """The LLM backend when the configuration asks for one (None: static only)."""
        st = self.state
        cfg = st.config
        if cfg.backend == "static":
            return None
        if st.llm is not None and st.llm_config == cfg.llm:
            return st.llm
        if st.llm is not None:
            self.spawn(_quiet(st.llm.aclose()))
            st.llm = None
        if cfg.backend == "auto" and not (
            os.environ.get(cfg.llm.api_key_env) or _is_local(cfg.llm.base_url)
        ):
            return None  # auto: the LLM only with a key or a local endpoint
        try:
            from roofline_lsp.llm.backend import LlmBackend

            backend = LlmBackend(cfg.llm)
        except Exception as e:
            self.show_config_error("llm", f"roofline.llm: {_one_line(e)}")
            return None
        st.llm, st.llm_config = backend, cfg.llm
        return backend

    def with_llm_verdicts(self, a: Analysis) -> Analysis:
        """``a`` with the target-GPU verdict of each kernel replaced by the LLM's answer when
        one is known for the kernel's current text."""
        st = self.state
        if a.report is None or st.config.backend == "static" or not st.llm_verdicts:
            return a
        changed = False
        places = []
        for p in a.places:
            v0 = p.kr.verdict
            hit = st.llm_verdicts.get((a.uri, p.kr.kernel.name, v0.gpu))
            if hit is not None and hit[0] == p.text_hash and v0.source == "static":
                kr = replace(p.kr, verdicts=(hit[1], *p.kr.verdicts[1:]))
                places.append(replace(p, kr=kr))
                changed = True
            else:
                places.append(p)
        if not changed:
            return a
        report = replace(a.report, kernels=tuple(p.kr for p in places))
        gpu = a.gpus[0]
        return replace(a, report=report, places=tuple(places), advice=advise(report, gpu))

    def start_llm(self, a: Analysis) -> None:
        st = self.state
        live: set[tuple[str, str, str]] = set()
        backend = self.llm_backend() if a.report is not None else None
        if backend is not None and a.report is not None:
            for p in a.places:
                v = p.kr.verdict
                key = (a.uri, p.kr.kernel.name, v.gpu)
                live.add(key)
                if v.source != "static":
                    continue  # measured, or already the LLM's
                running = st.llm_tasks.get(key)
                if running is not None and running[0] == p.text_hash:
                    continue
                if running is not None:
                    running[1].cancel()
                task = self.spawn(self._llm_request(backend, key, p, a))
                st.llm_tasks[key] = (p.text_hash, task)
        for key in [k for k in st.llm_tasks if k[0] == a.uri and k not in live]:
            st.llm_tasks.pop(key)[1].cancel()

    async def _llm_request(
        self, backend: Any, key: tuple[str, str, str], p: KernelPlace, a: Analysis
    ) -> None:
        st = self.state
        assert a.report is not None
        token = await self.progress_begin(f"roofline: asking the LLM about {p.kr.kernel.name}")
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
            self.logmsg(f"roofline: LLM request for {p.kr.kernel.name} failed: {_one_line(e)}")
            if st.config.backend == "llm" and not st.llm_failed_shown:
                st.llm_failed_shown = True
                self.message(
                    f"roofline: the LLM backend failed ({_one_line(e)}); showing static verdicts"
                )
            return
        finally:
            if token is not None:
                self.progress_end(token)
            cur = st.llm_tasks.get(key)
            if cur is not None and cur[1] is asyncio.current_task():
                del st.llm_tasks[key]
        st.llm_verdicts[key] = (p.text_hash, verdict)
        current = st.analyses.get(a.uri)
        if current is None:
            return
        updated = self.with_llm_verdicts(current)
        if updated is current:
            return
        st.analyses[a.uri] = updated
        doc = st.documents.get(a.uri)
        if doc is not None and updated.seq == doc.seq:
            self.publish(updated)
        self.refresh_views()

    def forget(self, uri: str) -> None:
        st = self.state
        task = st.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.cancel_compile(uri)
        st.compile_failed.pop(uri, None)
        for key in [k for k in st.llm_tasks if k[0] == uri]:
            st.llm_tasks.pop(key)[1].cancel()
        for key in [k for k in st.llm_verdicts if k[0] == uri]:
            del st.llm_verdicts[key]
        st.analyses.pop(uri, None)
        st.advice_caches.pop(uri, None)
        st.documents.pop(uri, None)
        st.declined_shown.discard(uri)
        st.dirty.discard(uri)
        st.last_edit.pop(uri, None)

    # -- lookups for the features ---------------------------------------------------------------
    def current(self, uri: str) -> tuple[Document, Analysis] | None:
        doc = self.state.documents.get(uri)
        a = self.state.analyses.get(uri)
        if doc is None or a is None or a.report is None:
            return None
        return doc, a

    def now(self, doc: Document, a: Analysis, offset: int) -> int:
        """An offset of the analysed snapshot, in the current text."""
        return offset if a.seq == doc.seq else doc.map_offset(offset, a.seq)

    def place_at(self, doc: Document, a: Analysis, offset: int) -> tuple[KernelPlace, bool] | None:
        """The kernel at ``offset`` of the current text (and whether it is a launch site)."""
        assert a.report is not None
        for site in a.report.detection.launches:
            if (
                self.now(doc, a, site.span.start_byte)
                <= offset
                <= self.now(doc, a, site.span.end_byte)
            ):
                for p in a.places:
                    if p.kr.kernel.name == site.kernel:
                        return p, True
        inside = [
            p for p in a.places if self.now(doc, a, p.start) <= offset <= self.now(doc, a, p.end)
        ]
        if inside:  # the innermost (an offload region inside a function that is one too)
            return min(inside, key=lambda p: p.end - p.start), False
        return None


# --------------------------------------------------------------------------------------------
# Pure helpers
# --------------------------------------------------------------------------------------------


def _analyse_snapshot(
    snap: Any,
    gpus: tuple[GpuProfile, ...],
    cfg: Config,
    measured: Any,
    previous: FileReport | None = None,
    advice_cache: AdviceCache | None = None,
    compiled: Mapping[int, CompiledCounts] | None = None,
) -> Analysis:
    """Runs in the analysis thread: detection, verdicts (reusing those of kernels whose
    context did not change since ``previous``; with ``compiled``, the PTX counts of the
    kernels given them), advice and feature offsets."""
    t0 = time.perf_counter()
    report = analyze_file(
        snap.source,
        snap.path,
        gpus,
        cfg,
        tree=snap.tree,
        measured=measured,
        previous=previous,
        compiled=compiled,
    )
    advice = advise(report, gpus[0], advice_cache)
    places = tuple(_place(snap.source, kr) for kr in report.kernels)
    elapsed = (time.perf_counter() - t0) * 1000
    return Analysis(
        snap.uri,
        snap.version,
        snap.seq,
        snap.source,
        snap.lines,
        report,
        advice,
        places,
        gpus,
        elapsed_ms=elapsed,
        ptx=compiled is not None,
    )


def _place(source: bytes, kr: KernelReport) -> KernelPlace:
    k = kr.kernel
    hint_at = k.name_span.end_byte
    if k.is_offload:
        # end of the pragma's (last) line, before the line break
        end = k.name_span.end_byte
        while end > k.name_span.start_byte and source[end - 1 : end] in (b"\n", b"\r"):
            end -= 1
        hint_at = end
    elif k.node is not None:
        d = k.node.child_by_field_name("declarator")
        while d is not None and d.type != "function_declarator":
            d = d.child_by_field_name("declarator")
        if d is not None:
            hint_at = d.end_byte
    text = source[k.span.start_byte : k.span.end_byte]
    return KernelPlace(
        kr,
        k.span.start_byte,
        k.span.end_byte,
        k.name_span.start_byte,
        k.name_span.end_byte,
        hint_at,
        hashlib.blake2b(text, digest_size=12).hexdigest(),
    )


def _range(lines: LineIndex, start: int, end: int, enc: Encoding) -> lsp.Range:
    s = lines.position_at(start, enc)
    e = lines.position_at(end, enc)
    return lsp.Range(lsp.Position(*s), lsp.Position(*e))


def _offsets(doc: Document, rng: lsp.Range, enc: Encoding) -> tuple[int, int]:
    """The byte offsets of an LSP range in ``doc`` (the inverse of :func:`_range`)."""
    return doc.offset_at(_pos(rng.start), enc), doc.offset_at(_pos(rng.end), enc)


def _restore(new: Config, old: Config, key: str) -> Config:
    """``new`` with the setting ``key`` (camelCase, ``llm.x`` for LLM settings) from ``old``."""
    top, _, sub = key.partition(".")
    name = _snake(top)
    if not name:
        return old
    if sub and name == "llm":
        sname = _snake(sub)
        if hasattr(old.llm, sname):
            return replace(new, llm=replace(new.llm, **{sname: getattr(old.llm, sname)}))
        return new
    if hasattr(old, name):
        return replace(new, **{name: getattr(old, name)})
    return new


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def _known(reg: GpuRegistry, name: str) -> bool:
    try:
        reg.get(name)
        return True
    except UnknownGpuError:
        return False


def _one_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return " ".join(text.split())[:400]


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _quiet(aw: Any) -> None:
    with contextlib.suppress(Exception):
        await aw


def _settings_section(settings: Any) -> Any:
    """The ``roofline`` part of a settings object (clients send it wrapped or not)."""
    if isinstance(settings, dict) and CONFIG_SECTION in settings:
        return settings[CONFIG_SECTION]
    return settings


def _pos(p: lsp.Position) -> tuple[int, int]:
    return (max(0, p.line), max(0, p.character))


# --------------------------------------------------------------------------------------------
# Handlers
# --------------------------------------------------------------------------------------------


def _guard(default: Callable[[], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A failing feature logs and answers ``default()``; it never takes the server down."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def awrapped(ls: RooflineServer, *args: Any) -> Any:
                try:
                    return await fn(ls, *args)
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.exception("%s failed", fn.__name__)
                    ls.logmsg(
                        f"roofline: {fn.__name__} failed: {_one_line(e)}", lsp.MessageType.Error
                    )
                    return default()

            return awrapped

        @functools.wraps(fn)
        def wrapped(ls: RooflineServer, *args: Any) -> Any:
            try:
                return fn(ls, *args)
            except Exception as e:
                log.exception("%s failed", fn.__name__)
                ls.logmsg(f"roofline: {fn.__name__} failed: {_one_line(e)}", lsp.MessageType.Error)
                return default()

        return wrapped

    return wrap


def create_server() -> RooflineServer:
    """The server with every feature and command registered."""
    server = RooflineServer()

    @server.feature(lsp.INITIALIZE)
    @_guard(lambda: None)
    def initialize(ls: RooflineServer, params: lsp.InitializeParams) -> None:
        st = ls.state
        st.init_options = _settings_section(params.initialization_options)
        opts = st.init_options if isinstance(st.init_options, dict) else None
        if st.init_options is not None and opts is None:
            ls.show_config_error("", "roofline: initializationOptions must be an object")
        base, errors = Config.from_dict(opts)
        for err in errors:
            ls.show_config_error(err.key, str(err))
            base = _restore(base, Config(), err.key)
        base = ls.validated(base, Config(), set())
        st.base_config = st.config = base

    @server.feature(lsp.INITIALIZED)
    @_guard(lambda: None)
    async def initialized(ls: RooflineServer, params: lsp.InitializedParams) -> None:
        try:
            changed = await pull_configuration(ls)
        finally:
            ls.state.config_ready.set()
        if changed and ls.state.analyses:
            ls.reanalyse_all("roofline: re-analysing open files")

    async def pull_configuration(ls: RooflineServer, settings: Any = None) -> bool:
        """Ask the client for the ``roofline`` section (or use pushed ``settings``)."""
        if ls._cap("workspace.configuration"):
            try:
                result = await asyncio.wait_for(
                    ls.workspace_configuration_async(
                        lsp.ConfigurationParams(
                            items=[lsp.ConfigurationItem(section=CONFIG_SECTION)]
                        )
                    ),
                    10,
                )
                settings = result[0] if result else None
            except Exception as e:
                ls.logmsg(f"roofline: workspace/configuration failed: {_one_line(e)}")
                settings = None
        else:
            settings = _settings_section(settings)
        return ls.apply_settings(settings)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @_guard(lambda: None)
    async def did_change_configuration(
        ls: RooflineServer, params: lsp.DidChangeConfigurationParams
    ) -> None:
        old_gpus = ls.state.config.gpus
        changed = await pull_configuration(ls, params.settings)
        if changed or old_gpus != ls.state.config.gpus:
            ls.reanalyse_all("roofline: re-analysing open files")

    @server.feature(lsp.SHUTDOWN)
    @_guard(lambda: None)
    async def shutdown(ls: RooflineServer, params: Any) -> None:
        st = ls.state
        for t in [
            *st.pending.values(),
            *st.compiles.values(),
            *[t for _h, t in st.llm_tasks.values()],
        ]:
            t.cancel()
        if st.llm is not None:
            await _quiet(st.llm.aclose())
            st.llm = None
        ls.analysis_pool.shutdown(wait=False, cancel_futures=True)

    # -- documents ----------------------------------------------------------------------------
    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @_guard(lambda: None)
    def did_open(ls: RooflineServer, params: lsp.DidOpenTextDocumentParams) -> None:
        td = params.text_document
        ls.forget(td.uri)
        cfg, _ = ls.file_config(uri_to_path(td.uri))
        doc = Document(td.uri, td.text, td.version, td.language_id, cfg.max_file_bytes)
        ls.state.documents[td.uri] = doc
        ls.schedule(td.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    @_guard(lambda: None)
    def did_change(ls: RooflineServer, params: lsp.DidChangeTextDocumentParams) -> None:
        doc = ls.state.documents.get(params.text_document.uri)
        if doc is None:
            return
        changes = []
        for c in params.content_changes:
            rng = getattr(c, "range", None)
            if rng is None:
                changes.append(Change(c.text))
            else:
                changes.append(Change(c.text, (_pos(rng.start), _pos(rng.end))))
        doc.apply(changes, params.text_document.version, ls.encoding)
        ls.cancel_compile(doc.uri)  # its text is out of date: kills the compiler process
        ls.schedule(doc.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    @_guard(lambda: None)
    def did_close(ls: RooflineServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        had = uri in ls.state.published
        ls.forget(uri)
        ls.state.published.discard(uri)
        if had:
            ls.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    # -- features -----------------------------------------------------------------------------
    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @_guard(lambda: None)
    def hover(ls: RooflineServer, params: lsp.HoverParams) -> lsp.Hover | None:
        found = ls.current(params.text_document.uri)
        if found is None:
            return None
        doc, a = found
        offset = doc.offset_at(_pos(params.position), ls.encoding)
        hit = ls.place_at(doc, a, offset)
        if hit is None:
            return None
        place, is_launch = hit
        card = launch_hover_markdown(place.kr) if is_launch else hover_markdown(place.kr, a.advice)
        s, e = ls.now(doc, a, place.name_start), ls.now(doc, a, place.name_end)
        rng = None
        if not is_launch and s <= offset <= e:
            rng = _range(doc.lines, s, e, ls.encoding)
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=card), range=rng
        )

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT, lsp.InlayHintOptions(resolve_provider=False))
    @_guard(list)
    def inlay_hints(ls: RooflineServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        found = ls.current(params.text_document.uri)
        if found is None:
            return []
        doc, a = found
        lo, hi = _offsets(doc, params.range, ls.encoding)
        out = []
        for p in a.places:
            at = ls.now(doc, a, p.hint_at)
            if not lo <= at <= hi:
                continue
            line, ch = doc.position_at(at, ls.encoding)
            out.append(
                lsp.InlayHint(
                    position=lsp.Position(line, ch),
                    label=inlay_label(p.kr.verdict),
                    padding_left=True,
                    tooltip=lsp.MarkupContent(
                        kind=lsp.MarkupKind.Markdown, value=hover_markdown(p.kr, a.advice)
                    ),
                )
            )
        return out

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensOptions(resolve_provider=False))
    @_guard(list)
    def code_lens(ls: RooflineServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        found = ls.current(params.text_document.uri)
        if found is None:
            return []
        doc, a = found
        out = []
        for p in a.places:
            line, _ = doc.position_at(ls.now(doc, a, p.start), ls.encoding)
            rng = lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0))
            out.append(
                lsp.CodeLens(
                    range=rng,
                    command=lsp.Command(title=lens_title(p.kr), command=CMD_SELECT_GPU),
                )
            )
            out.append(
                lsp.CodeLens(
                    range=rng,
                    command=lsp.Command(
                        title="explain", command=CMD_EXPLAIN, arguments=[doc.uri, line]
                    ),
                )
            )
        return out

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )
    @_guard(list)
    def code_action(ls: RooflineServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        found = ls.current(params.text_document.uri)
        if found is None:
            return []
        doc, a = found
        lo, hi = _offsets(doc, params.range, ls.encoding)
        only = params.context.only
        out: list[lsp.CodeAction] = []
        if not only or lsp.CodeActionKind.QuickFix in only:
            for adv in a.advice:
                if adv.fix is None:
                    continue
                s, e = ls.now(doc, a, adv.start), ls.now(doc, a, adv.end)
                if e < lo or s > hi:
                    continue
                edits = fix_edits(ls, doc, a, adv)
                if edits is None:
                    continue
                out.append(
                    lsp.CodeAction(
                        title=adv.fix.title,
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[ls.diagnostic(a, adv)] if a.seq == doc.seq else None,
                        is_preferred=True,
                        edit=workspace_edit(ls, doc, edits),
                    )
                )
        hit = ls.place_at(doc, a, lo)
        if not only and hit is not None:
            line, _ = doc.position_at(ls.now(doc, a, hit[0].start), ls.encoding)
            out.append(
                lsp.CodeAction(
                    title="Roofline: select target GPU",
                    command=lsp.Command(title="Select target GPU", command=CMD_SELECT_GPU),
                )
            )
            out.append(
                lsp.CodeAction(
                    title=f"Roofline: explain {hit[0].kr.kernel.name}",
                    command=lsp.Command(
                        title="Explain this kernel", command=CMD_EXPLAIN, arguments=[doc.uri, line]
                    ),
                )
            )
        return out

    def fix_edits(
        ls: RooflineServer, doc: Document, a: Analysis, adv: Advice
    ) -> list[lsp.TextEdit] | None:
        """The fix's edits in current coordinates; None when the text they touch changed."""
        assert adv.fix is not None
        out = []
        for ed in adv.fix.edits:
            s, e = ls.now(doc, a, ed.start), ls.now(doc, a, ed.end)
            # the replaced bytes, and a few before them (insertions), must be unchanged
            before = a.source[max(0, ed.start - 16) : ed.start]
            if (
                s < len(before)
                or doc.source[s - len(before) : e] != before + a.source[ed.start : ed.end]
            ):
                return None
            out.append(
                lsp.TextEdit(range=_range(doc.lines, s, e, ls.encoding), new_text=ed.new_text)
            )
        return out

    def workspace_edit(
        ls: RooflineServer, doc: Document, edits: Sequence[lsp.TextEdit]
    ) -> lsp.WorkspaceEdit:
        if ls._cap("workspace.workspace_edit.document_changes"):
            return lsp.WorkspaceEdit(
                document_changes=[
                    lsp.TextDocumentEdit(
                        text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                            uri=doc.uri, version=doc.version
                        ),
                        edits=list(edits),
                    )
                ]
            )
        return lsp.WorkspaceEdit(changes={doc.uri: list(edits)})

    # -- commands -----------------------------------------------------------------------------
    @server.command(CMD_LIST_GPUS)
    @_guard(list)
    def list_gpus(ls: RooflineServer, *args: Any) -> list[dict[str, Any]]:
        return [to_json(p) for p in ls.registry().all()]

    @server.command(CMD_SELECT_GPU)
    @_guard(lambda: None)
    async def select_gpu(ls: RooflineServer, *args: Any) -> Any:
        reg = ls.registry()
        name = args[0] if args and isinstance(args[0], str) and args[0].strip() else None
        if name is None:
            if not ls._cap("window.show_message"):
                return [to_json(p) for p in reg.all()]
            current = ls.file_config("")[1][0].name
            choice = await ls.window_show_message_request_async(
                lsp.ShowMessageRequestParams(
                    type=lsp.MessageType.Info,
                    message=f"roofline: target GPU (now {current})",
                    actions=[lsp.MessageActionItem(title=p.name) for p in reg.all()],
                )
            )
            if choice is None:
                return None
            name = choice.title
        try:
            gpu = reg.get(name)
        except UnknownGpuError as e:
            ls.message(f"roofline: {_one_line(e)}")
            return None
        ls.state.gpu_override = gpu.name
        ls.reanalyse_all(f"roofline: re-analysing for {gpu.name}")
        return gpu.name

    @server.command(CMD_REANALYZE)
    @_guard(lambda: 0)
    async def reanalyze(ls: RooflineServer, *args: Any) -> int:
        uris = list(ls.state.documents)
        await ls._reanalyse(uris, "roofline: re-analysing open files")
        return len(uris)

    @server.command(CMD_REPORT)
    async def report(ls: RooflineServer, *args: Any) -> str:
        if args and not isinstance(args[0], str):
            raise ValueError(f"roofline.report: expected a document URI, got {args[0]!r}")
        uri = args[0] if args else None
        if uri is None:
            if len(ls.state.documents) != 1:
                raise ValueError("roofline.report: give the document's URI")
            uri = next(iter(ls.state.documents))
        a = await fresh_analysis(ls, uri)
        if a is None:
            raise ValueError(f"roofline.report: {uri} is not an open document")
        if a.report is None:
            title = _basename(ls.state.documents[uri].path)
            why = a.declined or "no GPU kernel or offload region found in this file"
            return f"# Roofline report: {title}\n\n{why[0].upper()}{why[1:]}.\n"
        doc = ls.state.documents[uri]
        return file_report_markdown(a.report, a.advice, _basename(doc.path))

    @server.command(CMD_EXPLAIN)
    async def explain(ls: RooflineServer, *args: Any) -> str:
        if len(args) < 2 or not isinstance(args[0], str) or not isinstance(args[1], int):
            raise ValueError("roofline.explainKernel: expected [uri, line]")
        uri, line = args[0], args[1]
        a = await fresh_analysis(ls, uri)
        doc = ls.state.documents.get(uri)
        if a is None or a.report is None or doc is None:
            raise ValueError(f"roofline.explainKernel: {uri} has no analysed kernel")
        offset = doc.lines.offset_at(line, 0)
        hit = ls.place_at(doc, a, offset)
        if hit is None:  # the line of the lens is just above the kernel's first line
            end = doc.lines.offset_at(line + 1, 0)
            hit = ls.place_at(doc, a, end)
        if hit is None:
            raise ValueError(f"roofline.explainKernel: no kernel at line {line + 1}")
        kr = hit[0].kr
        v = kr.verdict
        note = ""
        if v.source == "llm":
            note = "The verdict above is the LLM's; its rationale is the explanation shown."
        elif ls.state.config.backend != "static":
            note = "The LLM's answer is not in yet: this is the static estimate."
        text = explain_markdown(kr, a.advice, note)
        ls.message(text, lsp.MessageType.Info)
        return text

    async def fresh_analysis(ls: RooflineServer, uri: str) -> Analysis | None:
        """The document's analysis, made now if it is missing or older than the text."""
        doc = ls.state.documents.get(uri)
        if doc is None:
            return None
        a = ls.state.analyses.get(uri)
        if a is None or a.seq != doc.seq:
            pending = ls.state.pending.pop(uri, None)
            if pending is not None:
                pending.cancel()
            a = await ls.analyse(uri)
        return a

    return server


def main_serve(tcp: str | None = None) -> int:
    """Run the server on stdio, or on ``HOST:PORT`` with ``tcp``; returns the exit code."""
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="roofline-lsp %(levelname)s %(name)s: %(message)s",
    )
    # ROOFLINE_LOG_LEVEL=INFO logs each analysis (pygls' own logs stay at WARNING: at INFO
    # it would log every message body, whole documents included)
    level = os.environ.get("ROOFLINE_LOG_LEVEL", "WARNING").upper()
    known = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    logging.getLogger("roofline_lsp").setLevel(level if level in known else "WARNING")
    # A short switch interval keeps request handling responsive while the analysis thread runs.
    sys.setswitchinterval(0.001)
    server = create_server()
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            print(f"roofline-lsp: --tcp expects HOST:PORT, got {tcp!r}", file=sys.stderr)
            return 2
        try:
            server.start_tcp(host.strip("[]"), int(port))
        except OSError as e:
            print(f"roofline-lsp: cannot listen on {tcp}: {e.strerror or e}", file=sys.stderr)
            return 1
        return 0
    server.start_io()
    return 0


def serve(argv_options: Sequence[str] | None = None) -> int:
    """``serve [--tcp HOST:PORT]`` from a list of options (the CLI passes its own)."""
    opts = list(argv_options or [])
    tcp = None
    if "--tcp" in opts:
        i = opts.index("--tcp")
        tcp = opts[i + 1] if i + 1 < len(opts) else ""
    return main_serve(tcp)


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
