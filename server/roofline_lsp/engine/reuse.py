"""Reuse across edits, its rules in one place.

An edit re-estimates only the kernels it touched. A kernel keeps its verdicts when its
*context key* is unchanged: its text, its callees (and where they are), the host functions
that launch it or hold its offload region and their callers two levels up (the estimator binds
sizes through calls), and the file context (GPUs, inputs, settings, measured profile, macros,
constants, hint comments, file-scope types/structs/globals). Every estimator input must be
part of :func:`file_context` or :class:`ContextKeys`, or verdicts go stale.

A kernel that moved keeps its verdicts with their line references moved, but only when every
line they refer to moved with it (:func:`moved_verdicts`). Detection keeps its own per-node memo
(``detect``'s ``DetectMemo``) and advice its per-kernel cache (``advice``'s ``AdviceCache``).
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import re
from dataclasses import replace

from tree_sitter import Node

from roofline_lsp.detect.treewalk import text_functions
from roofline_lsp.estimate.roofline import Inputs
from roofline_lsp.measured.ncu import MeasuredProfile
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.kernel import Detection, Function, Kernel
from roofline_lsp.model.terms import moved_term, term_lines
from roofline_lsp.model.verdict import Verdict

_HINT = re.compile(rb"//\s*roofline:[^\n]*")


def file_context(
    detection: Detection,
    root: Node,
    gpus: tuple[GpuProfile, ...],
    inputs: Inputs | None,
    config: Config,
    measured: MeasuredProfile | None,
) -> bytes:
    """What every kernel's verdict may depend on beyond its own code."""
    h = hashlib.sha256()
    for part in (
        repr([g for g in gpus]),
        repr(inputs),
        repr(config),  # every setting: a new estimator input cannot be forgotten here
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


class ContextKeys:
    """The context key of each kernel of one file: what its verdicts depend on (its text,
    its callees and where they are, the host functions that launch it or hold its region,
    and their callers: the estimator binds sizes through up to two levels of calls,
    ``bindings.host_context``). What the kernels share (the helpers' texts, each host
    function's digest, where each function is) is computed once per file: a file may launch
    thousands of kernels from one long ``main``."""

    def __init__(self, detection: Detection, file_context: bytes) -> None:
        self.detection = detection
        self.file_context = file_context
        self._digests: dict[int, bytes] = {}  # a function's start byte -> its text's digest
        # this file's functions by start, and the largest end among the first i of them
        here = [
            (f.span.start_byte, i, f)
            for i, f in enumerate(detection.functions.values())
            if f.file == detection.file
        ]
        here.sort(key=lambda t: (t[0], t[1]))
        self._starts = [t[0] for t in here]
        self._functions = [(t[1], t[2]) for t in here]
        self._max_end = list(itertools.accumulate((f.span.end_byte for *_, f in here), max))

    def of(self, kernel: Kernel) -> str:
        detection, src = self.detection, self.detection.source
        h = hashlib.sha256(self.file_context)
        h.update(f"{kernel.language}:{kernel.name}".encode())
        h.update(src[kernel.span.start_byte : kernel.span.end_byte])
        for name in kernel.callees:
            fn = detection.functions.get(name)
            if fn is not None and fn.node is not None and fn.node.text is not None:
                # in the same file: the distance, so that a kernel moved with its callees is
                # reused with its line references moved (see moved_verdicts)
                where = fn.line - kernel.line if fn.file == detection.file else fn.line
                h.update(f"{fn.file}:{where}".encode())
                h.update(fn.node.text)
        hosts: list[Function | None] = []
        for site in detection.launches_of(kernel):
            host = self._function_at(site.span.start_byte)
            if host is None:  # a launch outside any function
                h.update(src[site.span.start_byte : site.span.end_byte])
            hosts.append(host)
        if kernel.is_offload:
            host = self._function_at(kernel.span.start_byte)
            if host is None:  # a region outside any function (a broken parse): all of it
                h.update(src)
            hosts.append(host)
        h.update(self._helper_texts)
        seen: set[str] = set()
        for _ in range(3):  # the host functions, their callers and theirs
            level = [f for f in hosts if f is not None and f.name not in seen]
            for f in level:
                seen.add(f.name)
                h.update(self._digest(f))
            hosts = [
                detection.functions.get(c) for f in level for c in detection.callers.get(f.name, ())
            ]
        return h.hexdigest()

    @functools.cached_property
    def _helper_texts(self) -> bytes:
        """The helpers a launch expression may call (``ceil_div(n, bs)``), evaluated by
        their text."""
        d = self.detection
        h = hashlib.sha256()
        for name, tf in sorted(text_functions(d.functions, d.macros).items()):
            h.update(
                f"{name}({','.join(tf.params)})={tf.body};{tf.integer};{tf.integer_result}".encode()
            )
        return h.digest()

    def _digest(self, f: Function) -> bytes:
        digest = self._digests.get(f.span.start_byte)
        if digest is None:
            text = self.detection.source[f.span.start_byte : f.span.end_byte]
            digest = self._digests[f.span.start_byte] = hashlib.sha256(text).digest()
        return digest

    def _function_at(self, offset: int) -> Function | None:
        """The function of this file holding byte ``offset`` (the first in the detection's
        order when functions nest)."""
        found: tuple[int, Function] | None = None
        i = bisect.bisect_right(self._starts, offset) - 1
        while i >= 0 and self._max_end[i] > offset:  # no function before i reaches offset
            order, f = self._functions[i]
            if offset < f.span.end_byte and (found is None or order < found[0]):
                found = (order, f)
            i -= 1
        return found[1] if found is not None else None


def moved_verdicts(
    verdicts: tuple[Verdict, ...], kernel: Kernel, old: int, detection: Detection
) -> tuple[Verdict, ...] | None:
    """The verdicts of ``kernel``, unchanged (same context key) but moved from line ``old``
    to ``kernel.line``, with their line references (term and suggestion fields) moved with
    it; None when a term refers to a line outside the kernel and its callees in the same file
    (the context key holds their distance to the kernel, so these moved together): a loop of
    a header's function, say, stays where it is."""
    delta = kernel.line - old
    spans = [(old, old + kernel.end_line - kernel.line)]
    for name in kernel.callees:
        fn = detection.functions.get(name)
        if fn is not None and fn.file == detection.file:
            first = fn.line - delta
            spans.append((first, first + fn.span.end_point[0] - fn.span.start_point[0]))
    for v in verdicts:
        for term in v.terms:
            if any(not any(a <= n <= b for a, b in spans) for n in term_lines(term)):
                return None
    return tuple(
        replace(
            v,
            terms=tuple(moved_term(t, delta) for t in v.terms),
            suggestions=tuple(replace(s, line=s.line + delta) for s in v.suggestions),
        )
        for v in verdicts
    )
