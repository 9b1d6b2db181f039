"""``roofline-lsp gpus`` (``cli/list_gpus.py``)."""

from __future__ import annotations

import re
from pathlib import Path

from cli_helpers import run

from roofline_lsp.cli.arguments import EXIT_OK
from roofline_lsp.cli.list_gpus import WIDTH, gpu_table
from roofline_lsp.model.gpus import load_registry

FIXTURES = Path(__file__).parent / "fixtures" / "gpus"


def test_gpus_lists_ridge_points():
    code, out, _ = run("gpus")
    assert code == EXIT_OK
    assert "RTX-3080" in out and "H100-SXM5-80GB" in out


def test_gpu_table_has_one_aligned_row_per_gpu() -> None:
    reg = load_registry(str(FIXTURES / "add_gpu.toml"))
    text = gpu_table(reg)
    lines = text.splitlines()
    rows = {ln.split()[0]: ln for ln in lines if ln and ln.split()[0] in reg.names()}
    assert list(rows) == list(reg.names())
    rtx = rows["RTX-3080"].split()
    # name, FP64, FP32, FP16, INT32, DRAM, L2, then ridges fp64 fp32 fp16 int
    assert rtx[1:11] == [
        "0.3917",
        "25.07",
        "25.07",
        "12.53",
        "760.3",
        "5",
        "0.5152",
        "32.97",
        "32.97",
        "16.49",
    ]
    # the aliases each name answers to, listed under the table
    aliases = text.split("Aliases:", 1)[1]
    assert "RTX-3080: " in aliases and "ga102" in aliases and "lab1" in aliases
    # Right-aligned numbers: every row's ridge columns end at the same place.
    ends = {tuple(m.end() for m in re.finditer(r"\S+", ln))[1:11] for ln in rows.values()}
    assert len(ends) == 1
    assert "ridge" in lines[0] and "op/B" in text
    assert max(len(ln) for ln in lines) <= WIDTH
