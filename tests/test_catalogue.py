"""The advice rule catalogue: every rule documented."""

from __future__ import annotations

from roofline_lsp.advice.catalogue import RULES


def test_every_rule_has_a_documented_anchor() -> None:
    for code, rule in RULES.items():
        assert rule.code == code and rule.href.endswith(f"#{code.lower()}-{rule.slug}")
