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

from tree_sitter import Node, Tree

from roofline_lsp.compiler.compiled import CompiledCounts
from roofline_lsp.detect.kernels import Detection, Function, Kernel, detect
from roofline_lsp.estimate.roofline import Inputs, estimate
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.syntax.parsing import language_for_path, parse


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
    ``previous`` is the last report of the same document: detection re-walks only what
    changed, and kernels whose context (``_context_key``: their text, their callees and
    where these are, the host functions that launch them or hold their region and those
    functions' callers, the file's macros, types, globals and hint comments) is unchanged
    keep their verdicts, line references moved with the kernel, so an edit re-estimates
    only the kernels it touches.
    ``compiled`` maps a kernel's line to its compiler (PTX) counts (``compiled.py``); kernels
    given PTX counts are always re-estimated, the others may be reused.
    """
    config = config or Config()
    if inputs is None and config.args:
        inputs = Inputs(args=config.args)
    if tree is None:
        tree = parse(source, language_for_path(path))
    detection = detect(source, path, tree, previous.detection if previous is not None else None)
    file_context = _file_context(detection, tree.root_node, gpus, inputs, config, measured)
    reuse: dict[str, tuple[int, tuple[Verdict, ...]]] = {}
    reports = []
    for k in detection.kernels:
        key = _context_key(k, detection, file_context)
        cc = compiled.get(k.line) if compiled is not None else None
        ptx = cc is not None and cc.ok
        hit = previous.reuse.get(key) if previous is not None and not ptx else None
        if hit is not None and hit[0] != k.line:
            moved = _moved_verdicts(hit[1], k, hit[0], detection)
            hit = None if moved is None else (k.line, moved)
        if hit is not None:
            reuse[key] = hit
            reports.append(KernelReport(k, hit[1], key))
            continue
        verdicts = []
        for gpu in gpus:
            v = None
            if measured is not None:
                v = measured.verdict_for(k, gpu)  # type: ignore[attr-defined]
            if v is None:
                v = estimate(k, detection, gpu, inputs, config, compiled=cc)
            verdicts.append(v)
        reuse[key] = (k.line, tuple(verdicts))
        reports.append(KernelReport(k, reuse[key][1], key))
    return FileReport(path, detection, tuple(reports), tree, reuse)


_HINT = re.compile(rb"//\s*roofline:[^\n]*")


def _file_context(
    detection: Detection,
    root: Node,
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
    for node in _file_scope(root):  # types, structs, globals (``declarations.py``)
        if node.text is not None:
            h.update(node.text)
    return h.digest()


_SCOPES = frozenset(
    {
        "declaration_list",
        "linkage_specification",
        "namespace_definition",
        "preproc_if",
        "preproc_ifdef",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
        "template_declaration",
    }
)


def _file_scope(root: Node) -> list[Node]:
    """The file-scope nodes other than function definitions and comments, looking inside
    namespaces, ``extern "C"`` blocks, templates and preprocessor conditionals."""
    out: list[Node] = []
    stack = list(reversed(root.named_children))
    while stack:
        node = stack.pop()
        if node.type in _SCOPES:
            stack.extend(reversed(node.named_children))
        elif node.type not in ("function_definition", "comment"):
            out.append(node)
    return out


def _context_key(kernel: Kernel, detection: Detection, file_context: bytes) -> str:
    """What the kernel's verdicts depend on: its text, its callees (and where they are), the
    host functions that launch it or hold its region, and their callers (the estimator binds
    sizes through up to two levels of calls, ``bindings.host_context``)."""
    src = detection.source
    h = hashlib.sha256(file_context)
    h.update(f"{kernel.language}:{kernel.name}".encode())
    h.update(src[kernel.span.start_byte : kernel.span.end_byte])
    for name in kernel.callees:
        fn = detection.functions.get(name)
        if fn is not None and fn.node is not None and fn.node.text is not None:
            # in the same file: the distance, so that a kernel moved with its callees is
            # reused with its line references moved (see _moved_verdicts)
            where = fn.line - kernel.line if fn.file == detection.file else fn.line
            h.update(f"{fn.file}:{where}".encode())
            h.update(fn.node.text)
    hosts: list[Function | None] = []
    for site in detection.launches_of(kernel):
        host = _function_at(site.span.start_byte, detection)
        if host is None:  # a launch outside any function
            h.update(src[site.span.start_byte : site.span.end_byte])
        hosts.append(host)
    if kernel.is_offload:
        host = _function_at(kernel.span.start_byte, detection)
        if host is None:  # a region outside any function (a broken parse): all of it
            h.update(src)
        hosts.append(host)
    seen: set[str] = set()
    for _ in range(3):  # the host functions, their callers and theirs
        level = [f for f in hosts if f is not None and f.name not in seen]
        for f in level:
            seen.add(f.name)
            h.update(src[f.span.start_byte : f.span.end_byte])
        hosts = [
            detection.functions.get(c) for f in level for c in detection.callers.get(f.name, ())
        ]
    return h.hexdigest()


def _function_at(offset: int, detection: Detection) -> Function | None:
    """The function of this file holding byte ``offset``."""
    return next(
        (
            f
            for f in detection.functions.values()
            if f.file == detection.file and f.span.start_byte <= offset < f.span.end_byte
        ),
        None,
    )


_LINE_REF = re.compile(r"\bline (\d+)")


def shift_line_refs(text: str, delta: int) -> str:
    """``text`` with its ``line N`` references moved by ``delta`` lines."""
    if not delta:
        return text
    return _LINE_REF.sub(lambda m: f"line {int(m.group(1)) + delta}", text)


def _moved_verdicts(
    verdicts: tuple[Verdict, ...], kernel: Kernel, old: int, detection: Detection
) -> tuple[Verdict, ...] | None:
    """The verdicts of ``kernel``, unchanged (same context key) but moved from line ``old``
    to ``kernel.line``, with their line references moved with it; None when a reference is
    not to a line of the kernel or of a callee in the same file (the context key holds their
    distance to the kernel, so these moved together): a loop of a header's function, say,
    stays where it is, and a bare ``line N`` does not say which file it is in."""
    delta = kernel.line - old
    spans = [(old, old + kernel.end_line - kernel.line)]
    for name in kernel.callees:
        fn = detection.functions.get(name)
        if fn is not None and fn.file == detection.file:
            first = fn.line - delta
            spans.append((first, first + fn.span.end_point[0] - fn.span.start_point[0]))
    for v in verdicts:
        for text in (v.explanation, *v.terms):
            for m in _LINE_REF.finditer(text):
                n = int(m.group(1))
                if not any(a <= n <= b for a, b in spans):
                    return None
    return tuple(
        replace(
            v,
            explanation=shift_line_refs(v.explanation, delta),
            terms=tuple(shift_line_refs(t, delta) for t in v.terms),
            suggestions=tuple(replace(s, line=s.line + delta) for s in v.suggestions),
        )
        for v in verdicts
    )
