"""One file's analysis: detection, then a verdict per kernel and GPU from the static estimator
(or a measured profile). Shared by the CLI and the server; knows nothing of LSP.

The LLM backend refines these verdicts asynchronously (``llm.py``); it is not called here so
that this stays synchronous and fast.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tree_sitter import Tree

from .compiled import CompiledCounts
from .config import Config
from .gpus import GpuProfile
from .kernels import Detection, Kernel, LaunchSite, detect
from .parsing import language_for_path, parse
from .roofline import Inputs, estimate
from .verdict import Verdict


@dataclass(frozen=True)
class KernelReport:
    kernel: Kernel
    verdicts: tuple[Verdict, ...]  # one per GPU, target GPU first
    key: str = field(default="", compare=False)  # context key (see _context_key)

    @property
    def verdict(self) -> Verdict:
        return self.verdicts[0]


@dataclass(frozen=True)
class FileReport:
    path: str
    detection: Detection
    kernels: tuple[KernelReport, ...]
    tree: Tree | None = field(default=None, compare=False, repr=False)
    # (kernel line, verdicts) by kernel context key (see _context_key), for the next analysis
    reuse: dict[str, tuple[int, tuple[Verdict, ...]]] = field(
        default_factory=dict, compare=False, repr=False
    )


def analyze_file(
    source: bytes,
    path: str,
    gpus: tuple[GpuProfile, ...],
    config: Config | None = None,
    *,
    tree: Tree | None = None,
    inputs: Inputs | None = None,
    measured: object | None = None,
    previous: FileReport | None = None,
    compiled: Mapping[int, CompiledCounts] | None = None,
) -> FileReport:
    """Detect the kernels of ``source`` and estimate each on every GPU of ``gpus``.

    ``tree`` is a tree already parsed from ``source`` (the server keeps one per document);
    ``inputs`` are launch/argument values the user gave (else ``config.args``); the estimator
    also reads visible launch sites and ``// roofline: n=...`` hint comments itself.
    ``measured`` is a :class:`roofline_lsp.profile.MeasuredProfile` or None.
    ``previous`` is the last report of the same document: kernels whose context (their text,
    the functions they call and where these are, their launch sites' host functions, the
    file's macros and hint comments) is unchanged keep their verdicts, line references moved
    with the kernel, so an edit re-estimates only the kernels it touches.
    ``compiled`` maps a kernel's line to its compiler (PTX) counts (``compiled.py``); kernels
    given compiled counts are always re-estimated.
    """
    config = config or Config()
    if inputs is None and config.args:
        inputs = Inputs(args=config.args)
    if tree is None:
        tree = parse(source, language_for_path(path))
    detection = detect(source, path, tree)
    file_context = _file_context(detection, gpus, inputs, config, measured)
    reuse: dict[str, tuple[int, tuple[Verdict, ...]]] = {}
    reports = []
    for k in detection.kernels:
        key = _context_key(k, detection, file_context)
        hit = previous.reuse.get(key) if previous is not None and compiled is None else None
        if hit is not None:
            old_line, old_verdicts = hit
            moved = _shift_lines(old_verdicts, old_line, k.line) if old_line != k.line else hit[1]
            reuse[key] = (k.line, moved)
            reports.append(KernelReport(k, moved, key))
            continue
        verdicts = []
        for gpu in gpus:
            v = None
            if measured is not None:
                v = measured.verdict_for(k, gpu)  # type: ignore[attr-defined]
            if v is None:
                cc = compiled.get(k.line) if compiled is not None else None
                v = estimate(k, detection, gpu, inputs, config, compiled=cc)
            verdicts.append(v)
        reuse[key] = (k.line, tuple(verdicts))
        reports.append(KernelReport(k, reuse[key][1], key))
    return FileReport(path, detection, tuple(reports), tree, reuse)


_HINT = re.compile(rb"//\s*roofline:[^\n]*")


def _file_context(
    detection: Detection,
    gpus: tuple[GpuProfile, ...],
    inputs: Inputs | None,
    config: Config,
    measured: object | None,
) -> bytes:
    """What every kernel's verdict may depend on beyond its own code."""
    h = hashlib.sha256()
    for part in (
        repr([g for g in gpus]),
        repr(inputs),
        repr((config.args, config.counts)),
        str(id(measured)),
        repr(sorted((m.name, m.params, m.body) for m in detection.macros.values())),
        repr(sorted(detection.constants.items())),
    ):
        h.update(part.encode("utf-8", "replace"))
    for m in _HINT.finditer(detection.source):
        h.update(m.group(0))
    return h.digest()


def _context_key(kernel: Kernel, detection: Detection, file_context: bytes) -> str:
    src = detection.source
    h = hashlib.sha256(file_context)
    h.update(f"{kernel.language}:{kernel.name}".encode())
    h.update(src[kernel.span.start_byte : kernel.span.end_byte])
    for name in kernel.callees:
        fn = detection.functions.get(name)
        if fn is not None and fn.node is not None and fn.node.text is not None:
            # a callee's own line references do not move with the kernel: key on its place
            h.update(f"{fn.file}:{fn.line}".encode())
            h.update(fn.node.text)
    for site in detection.launches_of(kernel):
        host = _enclosing(site, detection)
        h.update(host)
    return h.hexdigest()


_LINE_REF = re.compile(r"\bline (\d+)")


def _shift_lines(verdicts: tuple[Verdict, ...], old: int, new: int) -> tuple[Verdict, ...]:
    """The verdicts of a kernel that moved from line ``old`` to ``new`` unchanged: references
    to lines of its own body (``loop over i (line 12)``) move with it."""
    delta = new - old

    def fix(text: str) -> str:
        def sub(m: re.Match[str]) -> str:
            n = int(m.group(1))
            return f"line {n + delta}" if n >= old else m.group(0)

        return _LINE_REF.sub(sub, text)

    return tuple(
        replace(
            v,
            explanation=fix(v.explanation),
            terms=tuple(fix(t) for t in v.terms),
            suggestions=tuple(replace(s, line=s.line + delta) for s in v.suggestions),
        )
        for v in verdicts
    )


def _enclosing(site: LaunchSite, detection: Detection) -> bytes:
    """The text of the function holding a launch site (its sizes and allocations)."""
    fn = next(
        (
            f
            for f in detection.functions.values()
            if f.file == site.file and f.span.start_byte <= site.span.start_byte < f.span.end_byte
        ),
        None,
    )
    if fn is None:
        return detection.source[site.span.start_byte : site.span.end_byte]
    return detection.source[fn.span.start_byte : fn.span.end_byte]
