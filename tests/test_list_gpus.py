"""``roofline-lsp gpus`` (``cli/list_gpus.py``)."""

from __future__ import annotations

from cli_helpers import run

from roofline_lsp.cli.arguments import EXIT_OK


def test_gpus_lists_ridge_points():
    code, out, _ = run("gpus")
    assert code == EXIT_OK
    assert "RTX-3080" in out and "H100-SXM5-80GB" in out
