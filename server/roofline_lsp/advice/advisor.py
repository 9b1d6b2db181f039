"""All per-kernel advice checks together, run in a fixed order, and the suggestions of the LLM
or the measured profile turned into advice on their lines (RL100).
"""

from __future__ import annotations

from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.advice.data_clauses import DataClauseChecks
from roofline_lsp.advice.memory_access import MemoryAccessChecks
from roofline_lsp.advice.nodes import line_starts
from roofline_lsp.advice.precision import PrecisionChecks
from roofline_lsp.advice.serialization import SerializationChecks


class KernelAdvisor(PrecisionChecks, SerializationChecks, MemoryAccessChecks, DataClauseChecks):
    """Every rule that looks at one kernel's body, for the verdict on the target GPU."""

    def run(self) -> list[Advice]:
        if self.k.body is None or self.index.too_deep:
            return []  # too deep: the lane analysis would be quadratic (nodes.MAX_NESTING)
        self.fp64_literals()
        self.fp64_arithmetic()
        self.pow_square()
        self.slow_math()
        self.atomics()
        self.divergence()
        if not self.k.is_offload:
            self.restrict()
        self.access_patterns()
        if self.k.is_offload:
            self.map_clauses()
            self.map_in_loop()
        self.model_suggestions()
        return self.out

    # RL100 ---------------------------------------------------------------------------------
    def model_suggestions(self) -> None:
        v = self.verdict
        if v.source == "static" or not v.suggestions:
            return
        starts = line_starts(self.source)
        who = "the LLM" if v.source == "llm" else "the measured profile"
        for s in v.suggestions:
            line = s.line - 1
            if not 0 <= line < len(starts):
                continue
            start = starts[line]
            end = self.source.find(b"\n", start)
            end = len(self.source) if end < 0 else end
            text = self.source[start:end]
            indent = len(text) - len(text.lstrip())
            self.add("RL100", (start + indent, end), f"{s.message} ({who})", "information")
