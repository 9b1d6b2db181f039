"""The advice rule catalogue and its result types: each :class:`Rule` (code, README anchor),
the :class:`Advice` a rule gives on a byte span of the analysed source, and the mechanical
:class:`Fix` (byte-span :class:`TextEdit` replacements) that comes with some of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from roofline_lsp.advice.impact import Gain

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
    gain: Gain | None = None  # what the fix is worth on the target GPU (``impact.py``)

    @property
    def rule(self) -> Rule:
        return RULES[self.code]

    @property
    def text(self) -> str:
        """The message without the estimate."""
        return self.template.format(*self.lines) if self.lines else self.template

    @property
    def estimate(self) -> str:
        """``est. 3.1x fewer DRAM bytes, up to 2.4x faster on H100`` ("" when unknown)."""
        g = self.gain
        if g is None:
            return ""
        parts = []
        if g.fewer_bytes is not None and g.fewer_bytes > 1.0:
            parts.append(f"{g.fewer_bytes:.2g}x fewer {'DRAM' if g.speedup else 'global'} bytes")
        if g.speedup is not None:
            parts.append(
                f"up to {g.speedup:.2g}x faster on {g.gpu}"
                if g.speedup >= 1.05
                else f"under 5% faster on {g.gpu}"
            )
        if g.basis:
            parts.append(g.basis)
        return "est. " + ", ".join(parts) if parts else ""

    @property
    def message(self) -> str:
        """The message with its estimate: what the editor, ``check`` and SARIF show."""
        est = self.estimate
        return f"{self.text} ({est})" if est else self.text

    @property
    def rank(self) -> float:
        """Larger first: what the fix is worth (1 when unknown)."""
        return self.gain.rank if self.gain is not None else 1.0

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


def by_impact(advice: Iterable[Advice]) -> list[Advice]:
    """``advice`` with the most valuable first (then by position): the order outputs list it."""
    return sorted(advice, key=lambda a: (a.severity != "information", -a.rank, a.start, a.code))
