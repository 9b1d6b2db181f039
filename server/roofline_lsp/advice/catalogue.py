"""The advice rule catalogue and its result types: each :class:`Rule` (code, README anchor),
the :class:`Advice` a rule gives on a byte span of the analysed source, and the mechanical
:class:`Fix` (byte-span :class:`TextEdit` replacements) that comes with some of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

Severity = Literal["information", "hint"]

# Where each rule is explained (the README section of the same name).
DOCS_URL = "https://github.com/roofline-lsp/roofline-lsp/blob/main/README.md"


@dataclass(frozen=True)
class Rule:
    code: str
    slug: str
    title: str

    @property
    def anchor(self) -> str:
        """The GitHub anchor of the README heading ``### RL001 fp64-literal``."""
        return f"{self.code.lower()}-{self.slug}"

    @property
    def href(self) -> str:
        return f"{DOCS_URL}#{self.anchor}"


RULES: dict[str, Rule] = {
    r.code: r
    for r in (
        Rule("RL001", "fp64-literal", "fp64 literal in an fp32 kernel"),
        Rule("RL002", "fp64-arithmetic", "fp64 arithmetic on a GPU with a low fp64 rate"),
        Rule("RL003", "pow-square", "pow(x, 2) instead of x * x"),
        Rule("RL004", "slow-math-in-loop", "division or special function in a hot loop"),
        Rule("RL005", "atomic-same-address", "atomics on one address"),
        Rule("RL006", "warp-divergence", "branch that splits warps on threadIdx"),
        Rule("RL007", "missing-restrict", "pointer parameter without __restrict__ / const"),
        Rule("RL008", "uncoalesced-access", "strided or uncoalesced global access"),
        Rule("RL009", "global-reread", "global data re-read in a loop without reuse"),
        Rule("RL010", "small-launch", "launch configuration too small for the GPU"),
        Rule("RL011", "map-tofrom", "map(tofrom:) where to or from would do"),
        Rule("RL012", "map-in-loop", "data mapped in every iteration of a host loop"),
        Rule("RL100", "model-suggestion", "suggestion from the LLM or the measured profile"),
    )
}


@dataclass(frozen=True)
class TextEdit:
    """Replace bytes ``[start, end)`` of the analysed source with ``new_text``."""

    start: int
    end: int
    new_text: str


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class Advice:
    code: str
    kernel: str
    start: int  # byte span in the analysed source
    end: int
    # the message; with ``lines``, a ``str.format`` template whose ``{0}``, ``{1}``... are
    # the 1-based source lines it refers to (fields, so advice moved with its kernel moves
    # them)
    template: str
    severity: Severity = "information"
    fix: Fix | None = None
    lines: tuple[int, ...] = ()

    @property
    def rule(self) -> Rule:
        return RULES[self.code]

    @property
    def message(self) -> str:
        return self.template.format(*self.lines) if self.lines else self.template

    def moved(self, delta: int, lines: int) -> Advice:
        """This advice for its kernel moved by ``delta`` bytes and ``lines`` lines."""
        fix = self.fix
        if fix is not None:
            edits = tuple(replace(e, start=e.start + delta, end=e.end + delta) for e in fix.edits)
            fix = replace(fix, edits=edits)
        return replace(
            self,
            start=self.start + delta,
            end=self.end + delta,
            fix=fix,
            lines=tuple(n + lines for n in self.lines),
        )
