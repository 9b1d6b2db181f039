"""Suggestions of the LLM or the measured profile turned into advice (RL100)."""

from __future__ import annotations

import dataclasses

from advice_fixtures import FIXTURES, RTX, where

from roofline_lsp.advice.advise import advise
from roofline_lsp.engine.analysis import analyze_file


def test_model_suggestions_become_advice_on_their_line() -> None:
    from roofline_lsp.model.verdict import Suggestion

    src = (FIXTURES / "fp64_flip.cu").read_bytes()
    rep = analyze_file(src, "fp64_flip.cu", (RTX,))
    kr = rep.kernels[0]
    line = src.decode().splitlines().index("            v = v * a + b;") + 1
    v = dataclasses.replace(
        kr.verdict, source="llm", suggestions=(Suggestion(line, "unroll the chain"),)
    )
    rep = dataclasses.replace(rep, kernels=(dataclasses.replace(kr, verdicts=(v,)),))
    found = where(src, advise(rep, RTX), "RL100")
    assert found == [("horner64", "v = v * a + b;")]
