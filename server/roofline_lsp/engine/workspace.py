"""The engine: one API that the language server, ``check``, ``eval`` and the benchmarks share.

A :class:`Workspace` owns the resolved configuration (one typed :class:`Config`, per-file
overrides applied here), the GPU profiles, the measured profile, the open documents (open
buffers first, the disk second), the last analysis of each document, and the refinements of
its verdicts (PTX counts from a compile, LLM answers), in the order ``refinement`` states.
It knows nothing of LSP: positions are bytes, results are frozen dataclasses, problems are
returned as data for the caller to show. Scheduling (debounce, background tasks,
cancellation) is ``engine.scheduler``'s; everything here is either synchronous and pure
enough to run in a worker thread (:meth:`Workspace.analyse_snapshot`) or a coroutine that
never touches the documents (:meth:`Workspace.compile_counts`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from roofline_lsp.advice.advise import AdviceCache, advise
from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.compiler.compiled import compiled_counts_for_file, default_cache
from roofline_lsp.compiler.kernel_ptx import CompiledCounts
from roofline_lsp.engine.analysis import analyze_file
from roofline_lsp.engine.documents import Document, Snapshot, uri_to_path
from roofline_lsp.engine.files import read_source
from roofline_lsp.engine.refinement import wants_llm
from roofline_lsp.estimate.line_shares import LineShare, kernel_line_shares
from roofline_lsp.estimate.roofline import Inputs
from roofline_lsp.llm.backend import LlmBackend
from roofline_lsp.measured.ncu import MeasuredProfile, load_profile
from roofline_lsp.model.config import Config, ConfigError
from roofline_lsp.model.gpus import GpuProfile, GpuRegistry, UnknownGpuError, load_registry
from roofline_lsp.model.kernel import Detection
from roofline_lsp.model.report import FileReport, KernelReport
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.store.cache import ResultCache
from roofline_lsp.syntax.functions import function_declarator
from roofline_lsp.syntax.positions import LineIndex
from roofline_lsp.syntax.sources import SourceView

LlmKey = tuple[str, str, str]  # (document uri, kernel name, GPU name)


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
class DocumentAnalysis:
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
    ptx: bool = False  # verdicts refined with the compiler's PTX counts


class Workspace:
    """Configuration, GPU profiles, measured profile, documents and their analyses."""

    def __init__(self, config: Config | None = None) -> None:
        self.base_config = config or Config()  # before client settings (initializationOptions)
        self.config = self.base_config
        self.gpu_override: str | None = None  # a GPU picked with the selectGpu command
        self.documents: dict[str, Document] = {}
        self.analyses: dict[str, DocumentAnalysis] = {}
        # per document: advice of unchanged kernels, reused by the next analysis (advise)
        self.advice_caches: dict[str, AdviceCache] = {}
        self.llm_verdicts: dict[LlmKey, tuple[str, Verdict]] = {}  # key -> (text hash, verdict)
        self._measured: MeasuredProfile | None = None
        self._measured_key: tuple[str, int] | None = None
        self._llm: LlmBackend | None = None
        self._llm_config: object = None
        self._retired: list[LlmBackend] = []  # replaced after a settings change, to close
        self._ptx_cache: ResultCache | None = None
        # (uri, analysis seq, kernel offset) -> per-line shares; for the last few kernels
        self._line_shares: dict[tuple[str, int, int], dict[int, LineShare]] = {}

    # -- configuration ------------------------------------------------------------------------
    def registry(self, config: Config | None = None) -> GpuRegistry:
        return load_registry((config or self.config).gpu_profiles)

    def settle(self, new: Config, old: Config) -> tuple[Config, list[ConfigError]]:
        """``new`` with its GPU names, GPU-profile file and measured-profile path checked
        against what exists: each bad value is replaced by the one of ``old`` (or the
        default) and reported."""
        problems: list[ConfigError] = []
        try:
            reg = load_registry(new.gpu_profiles)
        except Exception as e:
            problems.append(ConfigError("gpuProfiles", one_line(e)))
            new = replace(new, gpu_profiles=old.gpu_profiles)
            reg = load_registry(new.gpu_profiles)
        try:
            reg.get(new.gpu)
        except UnknownGpuError as e:
            problems.append(ConfigError("gpu", one_line(e)))
            new = replace(new, gpu=old.gpu if _known(reg, old.gpu) else Config().gpu)
        unknown = [g for g in new.compare_gpus if not _known(reg, g)]
        if unknown:
            problems.append(ConfigError("compareGpus", f"unknown GPU {', '.join(unknown)}"))
            new = replace(new, compare_gpus=tuple(g for g in new.compare_gpus if _known(reg, g)))
        if new.profile:
            try:
                os.stat(new.profile)
            except OSError as e:
                problem: str | None = f"{new.profile}: {e.strerror or e}"
            else:
                problem = self.load_measured(new.profile)
            if problem is not None:
                problems.append(ConfigError("profile", problem))
                new = replace(new, profile=old.profile)
        return new, problems

    def load_measured(self, path: str) -> str | None:
        """Load the measured profile at ``path`` (again only when the file changed); the
        reason it failed, or None."""
        try:
            key = (path, os.stat(path).st_mtime_ns)
        except OSError as e:
            return f"{path}: cannot read ({e.strerror or e})"  # the words of load_profile
        if self._measured_key == key:
            return None
        try:
            self._measured = load_profile(path)
        except Exception as e:
            return one_line(e)
        self._measured_key = key
        return None

    def measured_for(self, config: Config) -> MeasuredProfile | None:
        return self._measured if config.profile else None

    def file_config(self, path: str) -> tuple[Config, tuple[GpuProfile, ...]]:
        """The configuration for one file (per-glob overrides) and its GPUs, target first."""
        cfg = self.config.for_file(path) if self.config.overrides else self.config
        reg = self.registry(self.config)
        names = list(cfg.gpus)
        if self.gpu_override:
            names = [self.gpu_override, *self.config.compare_gpus]
        gpus: list[GpuProfile] = []
        for n in names:
            try:
                g = reg.get(n)
            except UnknownGpuError:
                continue  # an override with an unknown GPU: fall back to the others
            if g.name not in (x.name for x in gpus):
                gpus.append(g)
        if not gpus:
            gpus.append(reg.get(self.config.gpu))
        return cfg, tuple(gpus)

    # -- sources: open buffers first, then the disk -----------------------------------------
    def read(self, path: str) -> tuple[bytes | None, str | None]:
        """The text of ``path``: an open document's buffer (saved or not), else the file on
        disk; ``(None, reason)`` when it is too large, binary or unreadable."""
        buffer = self.open_buffer(path)
        if buffer is not None:
            return buffer, None
        return read_source(path, self.config.for_file(path).max_file_bytes)

    def open_buffer(self, path: str) -> bytes | None:
        """The text of the open document at ``path`` (saved or not), None when none is open.
        Safe from the analysis thread."""
        want = os.path.normpath(path)
        for doc in list(self.documents.values()):
            if os.path.normpath(doc.path) == want:
                return doc.source
        return None

    def overlay(self) -> SourceView | None:
        """What an analysis reads other files through: the open buffers over the disk (None
        when no document is open: the disk alone)."""
        return SourceView(self.open_buffer, overlay=True) if self.documents else None

    def dependents(self, path: str) -> list[str]:
        """The open documents whose last analysis read ``path`` (a header or sibling file)."""
        want = os.path.normpath(path)
        return [
            uri
            for uri, a in list(self.analyses.items())
            if a.report is not None and any(s.path == want for s in a.report.reads)
        ]

    def open_document(self, uri: str, text: str, version: int, language_id: str) -> Document:
        """Open (or re-open) the document ``uri`` with ``text``; its size limit is the one of
        its file's configuration. Whatever was known about an earlier ``uri`` is forgotten."""
        self.forget(uri)
        cfg, _ = self.file_config(uri_to_path(uri))
        doc = Document(uri, text, version, language_id, cfg.max_file_bytes)
        self.documents[uri] = doc
        return doc

    # -- the last analysis, in the current text's coordinates ----------------------------------
    def current(self, uri: str) -> tuple[Document, DocumentAnalysis] | None:
        """The open document ``uri`` and its last analysis, when that found kernels."""
        doc = self.documents.get(uri)
        a = self.analyses.get(uri)
        if doc is None or a is None or a.report is None:
            return None
        return doc, a

    @staticmethod
    def place_at(
        doc: Document, a: DocumentAnalysis, offset: int
    ) -> tuple[KernelPlace, bool] | None:
        """The kernel at ``offset`` of the current text (and whether it is a launch site)."""
        assert a.report is not None
        for site in a.report.detection.launches:
            if (
                current_offset(doc, a, site.span.start_byte)
                <= offset
                <= current_offset(doc, a, site.span.end_byte)
            ):
                for p in a.places:
                    if p.kr.kernel.name == site.kernel:
                        return p, True
        inside = [
            p
            for p in a.places
            if current_offset(doc, a, p.start) <= offset <= current_offset(doc, a, p.end)
        ]
        if inside:  # the innermost (an offload region inside a function that is one too)
            return min(inside, key=lambda p: p.end - p.start), False
        return None

    def line_share(self, a: DocumentAnalysis, place: KernelPlace, line: int) -> LineShare | None:
        """The share of ``place``'s kernel's FLOPs, integer ops and DRAM bytes that ``line``
        (1-based, in the analysed snapshot) accounts for; None when it has none. The kernel
        is estimated again for this (source counts), once per analysis."""
        assert a.report is not None
        key = (a.uri, a.seq, place.start)
        shares = self._line_shares.get(key)
        if shares is None:
            cfg, gpus = self.file_config(uri_to_path(a.uri))
            shares = kernel_line_shares(
                place.kr.kernel, a.report.detection, gpus[0], cfg, self.overlay()
            )
            if len(self._line_shares) >= 256:
                self._line_shares.pop(next(iter(self._line_shares)))
            self._line_shares[key] = shares
        share = shares.get(line)
        return None if share is None or share.empty else share

    # -- analysis -----------------------------------------------------------------------------
    def analyse_source(
        self,
        path: str,
        source: bytes,
        *,
        previous: FileReport | None = None,
        compiled: Mapping[int, CompiledCounts] | None = None,
        inputs: Inputs | None = None,
        read: SourceView | None = None,
    ) -> FileReport:
        """Every kernel of ``source`` (the text of ``path``) with a verdict per GPU; other
        files are read through ``read`` (default: the open buffers over the disk)."""
        cfg, gpus = self.file_config(path)
        return analyze_file(
            source,
            path,
            gpus,
            cfg,
            inputs=inputs,
            measured=self.measured_for(cfg),
            previous=previous,
            compiled=compiled,
            read=read if read is not None else self.overlay(),
        )

    def analyse_snapshot(
        self,
        snap: Snapshot,
        previous: FileReport | None = None,
        compiled: Mapping[int, CompiledCounts] | None = None,
    ) -> DocumentAnalysis:
        """One document's analysis, safe to run in a worker thread: detection, verdicts
        (reusing those of kernels whose context did not change since ``previous``; with
        ``compiled``, the PTX counts of the kernels given them), advice and feature offsets."""
        t0 = time.perf_counter()
        cfg, gpus = self.file_config(snap.path)
        report = analyze_file(
            snap.source,
            snap.path,
            gpus,
            cfg,
            tree=snap.tree,
            measured=self.measured_for(cfg),
            previous=previous,
            compiled=compiled,
            read=self.overlay(),
        )
        advice = advise(report, gpus[0], self.advice_caches.setdefault(snap.uri, {}))
        places = tuple(kernel_place(snap.source, kr) for kr in report.kernels)
        return DocumentAnalysis(
            snap.uri,
            snap.version,
            snap.seq,
            snap.source,
            snap.lines,
            report,
            advice,
            places,
            gpus,
            elapsed_ms=(time.perf_counter() - t0) * 1000,
            ptx=compiled is not None,
        )

    def install(self, result: DocumentAnalysis) -> DocumentAnalysis | None:
        """Make ``result`` its document's analysis, with the LLM verdicts known for its
        kernels merged in; None when the document is closed or a newer analysis is there."""
        doc = self.documents.get(result.uri)
        if doc is None:
            return None
        prev = self.analyses.get(result.uri)
        if prev is not None and prev.seq > result.seq:
            return None
        result = self.with_llm_verdicts(result)
        self.analyses[result.uri] = result
        doc.forget_edits_before(result.seq)
        return result

    def forget(self, uri: str) -> None:
        """Drop everything known about the document ``uri`` (closed, or re-opened)."""
        for key in [k for k in self.llm_verdicts if k[0] == uri]:
            del self.llm_verdicts[key]
        self.analyses.pop(uri, None)
        self.advice_caches.pop(uri, None)
        self.documents.pop(uri, None)

    # -- refinement: compiler counts ------------------------------------------------------------
    @property
    def ptx_cache(self) -> ResultCache:
        if self._ptx_cache is None:
            self._ptx_cache = default_cache(self.config)
        return self._ptx_cache

    async def compile_counts(
        self,
        path: str,
        source: bytes | None,
        detection: Detection,
        *,
        semaphore: asyncio.Semaphore | None = None,
    ) -> dict[int, CompiledCounts] | str:
        """Per kernel line of ``detection``, the compiler (PTX) counts of the text ``source``
        of ``path`` (None: the file on disk), or why there are none. Never raises."""
        cfg, gpus = self.file_config(path)
        return await compiled_counts_for_file(
            path, source, detection, gpus[0], cfg, cache=self.ptx_cache, semaphore=semaphore
        )

    async def with_compiled_counts(
        self,
        report: FileReport,
        source: bytes,
        *,
        read: SourceView | None = None,
        semaphore: asyncio.Semaphore | None = None,
    ) -> FileReport:
        """``report`` (of ``source``, as on disk) analysed again with its compile's counts:
        the kernels given counts are estimated again, a failed compile's reason joins their
        terms; ``report`` itself when nothing was compiled (source counts, no kernel)."""
        counts = await self.compile_counts(report.path, None, report.detection, semaphore=semaphore)
        if isinstance(counts, str):
            return report
        return self.analyse_source(report.path, source, previous=report, compiled=counts, read=read)

    # -- refinement: LLM ----------------------------------------------------------------------
    def llm_backend(self) -> tuple[LlmBackend | None, str | None]:
        """The LLM backend when the configuration asks for one (and why it cannot be made).
        ``auto`` uses the LLM only with an API key or a local endpoint."""
        cfg = self.config
        if cfg.backend == "static":
            return None, None
        if self._llm is not None and self._llm_config == cfg.llm:
            return self._llm, None
        if self._llm is not None:
            self._retired.append(self._llm)
            self._llm = None
        if cfg.backend == "auto" and not (
            os.environ.get(cfg.llm.api_key_env) or is_local_url(cfg.llm.base_url)
        ):
            return None, None
        try:
            backend = LlmBackend(cfg.llm)
        except Exception as e:
            return None, one_line(e)
        self._llm, self._llm_config = backend, cfg.llm
        return backend, None

    def with_llm_verdicts(self, a: DocumentAnalysis) -> DocumentAnalysis:
        """``a`` with the target-GPU verdict of each kernel replaced by the LLM's answer when
        one is known for the kernel's current text (and the verdict is one it may replace)."""
        if a.report is None or self.config.backend == "static" or not self.llm_verdicts:
            return a
        changed = False
        places = []
        for p in a.places:
            v0 = p.kr.verdict
            hit = self.llm_verdicts.get((a.uri, p.kr.kernel.name, v0.gpu))
            if hit is not None and hit[0] == p.text_hash and wants_llm(v0):
                kr = replace(p.kr, verdicts=(hit[1], *p.kr.verdicts[1:]))
                places.append(replace(p, kr=kr))
                changed = True
            else:
                places.append(p)
        if not changed:
            return a
        report = replace(a.report, kernels=tuple(p.kr for p in places))
        return replace(a, report=report, places=tuple(places), advice=advise(report, a.gpus[0]))

    def remember_llm_verdict(self, key: LlmKey, text_hash: str, verdict: Verdict) -> None:
        self.llm_verdicts[key] = (text_hash, verdict)

    @property
    def has_retired(self) -> bool:
        """Whether LLM backends replaced after a settings change wait to be closed."""
        return bool(self._retired)

    async def close_retired(self) -> None:
        """Close the LLM backends replaced after a settings change."""
        backends, self._retired = self._retired, []
        for backend in backends:
            with contextlib.suppress(Exception):
                await backend.aclose()

    async def aclose(self) -> None:
        """Close the LLM backends' connections (the current one and those replaced)."""
        backends, self._retired = [self._llm, *self._retired], []
        self._llm = None
        for backend in backends:
            if backend is not None:
                with contextlib.suppress(Exception):
                    await backend.aclose()


def with_llm_answers(
    reports: Sequence[FileReport], answers: Mapping[tuple[int, int], Verdict]
) -> list[FileReport]:
    """``reports`` with the target-GPU verdict of kernel ``j`` of report ``i`` replaced by
    ``answers[(i, j)]``."""
    out = []
    for i, fr in enumerate(reports):
        kernels = tuple(
            KernelReport(kr.kernel, (answers[(i, j)], *kr.verdicts[1:]))
            if (i, j) in answers
            else kr
            for j, kr in enumerate(fr.kernels)
        )
        out.append(replace(fr, kernels=kernels))
    return out


def current_offset(doc: Document, a: DocumentAnalysis, offset: int) -> int:
    """An offset of the analysed snapshot of ``doc``, in its current text."""
    return offset if a.seq == doc.seq else doc.map_offset(offset, a.seq)


def kernel_place(source: bytes, kr: KernelReport) -> KernelPlace:
    """Where a kernel's hover, inlay hint and code lens go, in bytes of ``source``."""
    k = kr.kernel
    hint_at = k.name_span.end_byte
    if k.is_offload:
        # end of the pragma's (last) line, before the line break
        end = k.name_span.end_byte
        while end > k.name_span.start_byte and source[end - 1 : end] in (b"\n", b"\r"):
            end -= 1
        hint_at = end
    elif k.node is not None:
        d = function_declarator(k.node)
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


def one_line(e: BaseException) -> str:
    """An exception as one line of at most 400 characters (for messages and logs)."""
    text = str(e).strip() or type(e).__name__
    return " ".join(text.split())[:400]


def is_local_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _known(reg: GpuRegistry, name: str) -> bool:
    try:
        reg.get(name)
        return True
    except UnknownGpuError:
        return False
