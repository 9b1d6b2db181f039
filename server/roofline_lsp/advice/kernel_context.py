"""The state every per-kernel advice check works on, and how a check reports advice."""

from __future__ import annotations

import functools

from tree_sitter import Node

from roofline_lsp.advice.catalogue import Advice, Fix, Severity
from roofline_lsp.advice.impact import Gain
from roofline_lsp.advice.lanes import LaneAnalysis
from roofline_lsp.advice.nodes import (
    BRANCHES,
    BodyIndex,
    first_line_span,
    parents,
    pointer_aliases,
)
from roofline_lsp.advice.thread_vars import thread_vars
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.kernel import Detection
from roofline_lsp.model.report import KernelReport
from roofline_lsp.model.verdict import LineInstructions

# the statements whose lines a node's compiled code may be booked on
_STATEMENTS = ("expression_statement", "declaration", "return_statement")


class KernelContext:
    """One kernel under advice: its report, verdict on the target GPU, thread variables and
    body nodes, and the advice found so far (:meth:`add`). The rule families are mixins of
    this class, combined in :class:`~roofline_lsp.advice.advisor.KernelAdvisor`."""

    def __init__(
        self, kr: KernelReport, detection: Detection, source: bytes, gpu: GpuProfile
    ) -> None:
        self.kr = kr
        self.k = kr.kernel
        self.detection = detection
        self.source = source
        self.gpu = gpu
        self.verdict = kr.verdict
        self.bound = self.verdict.bound
        self.index = BodyIndex(self.k.body)
        self.vars = thread_vars(self.index.nodes)
        self.counts = self.verdict.counts
        self.aliases = pointer_aliases(self.index.nodes)
        self.out: list[Advice] = []
        self.nodes = self.index.nodes

    @functools.cached_property
    def lanes(self) -> LaneAnalysis:
        """What values are across the lanes of a warp (made when a rule first asks: the
        rules of a compute-bound kernel without atomics or branches never do)."""
        return LaneAnalysis(self.k, self.index)

    def add(
        self,
        code: str,
        node_or_span: Node | tuple[int, int],
        message: str,
        severity: Severity = "information",
        fix: Fix | None = None,
        lines: tuple[int, ...] = (),
        gain: Gain | None = None,
    ) -> None:
        """Report advice; with ``lines``, ``message`` is a template (see ``Advice``). Advice
        whose ``gain`` is under 5% on the target GPU is a hint at most."""
        if isinstance(node_or_span, tuple):
            start, end = node_or_span
        else:
            start, end = first_line_span(self.source, node_or_span)
        if gain is not None and gain.small:
            severity = "hint"
        self.out.append(Advice(code, self.k.name, start, end, message, severity, fix, lines, gain))

    def offset(self, node: Node) -> int:
        """``node``'s line as an offset from the kernel's first line (how ``Counts.line_ops``
        and ``line_runs`` are keyed)."""
        return node.start_point.row + 1 - self.k.line

    def compiled(self, node: Node) -> LineInstructions | None:
        """With PTX counts, what the compiled code of ``node``'s statement holds (summed over
        its lines, from the statement's first line to ``node``'s last: a continued expression
        is often compiled on its first line); None with source counts, where nothing can be
        confirmed."""
        c = self.counts
        if c is None or c.counts_from != "ptx":
            return None
        first = node.start_point.row
        for p in parents(node):
            if p.type in _STATEMENTS:
                first = min(first, p.start_point.row)
                break
            if p.type in BRANCHES:
                break  # a loop or branch header: its own line
        total = LineInstructions()
        for row in range(first, node.end_point.row + 1):
            f = c.line_ptx.get(row + 1 - self.k.line)
            if f is not None:
                total = LineInstructions(
                    total.divisions + f.divisions,
                    total.to_fp64 + f.to_fp64,
                    total.fp64_flops + f.fp64_flops,
                    total.global_loads + f.global_loads,
                )
        return total

    def on(self) -> str:
        return f"on {self.gpu.name}"
