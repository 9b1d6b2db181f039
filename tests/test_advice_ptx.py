"""Advice confirmed on the compiled code: with PTX counts, RL004 speaks only where the line
compiles to a real division (`div`/`rem`, not the multiply a constant divisor becomes), RL001
only where the statement is computed in fp64 (`cvt.f64.f32`, fp64 arithmetic), RL007 only
where the loads it counts are still loads. A real nvcc compiles ``advice_confirm.cu`` through
``check``; without nvcc the test skips. The same rules on hand-made PTX facts, without
nvcc: ``test_precision.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run
from ptx_helpers import NVCC

from roofline_lsp.cli.main import EXIT_OK

FIXTURE = Path(__file__).parent / "fixtures" / "ptx" / "advice_confirm.cu"


def _diagnostics(tmp_path: Path, counts: str) -> dict[str, list[tuple[str, int]]]:
    """(rule, line) of each kernel's diagnostics, and where its counts came from."""
    code, out, err = run(
        "check", str(FIXTURE), "--gpu", "rtx3080", "--counts", counts,
        "--cache-dir", str(tmp_path / "cache"), "--format", "json",
    )  # fmt: skip
    assert code == EXIT_OK, err
    found: dict[str, list[tuple[str, int]]] = {}
    for k in json.loads(out):
        (v,) = k["verdicts"]
        found[k["kernel"]] = [(d["rule"], d["line"]) for d in k["diagnostics"]]
        found[k["kernel"]].append(("counts", 0 if v["counts"]["counts_from"] == "source" else 1))
    return found


def test_rules_are_confirmed_on_the_ptx(tmp_path: Path) -> None:
    if NVCC is None:
        pytest.skip("no nvcc on this machine")  # as every nvcc test (.ci/install-toolchains.sh)
    source = _diagnostics(tmp_path, "source")
    # the source analysis flags both divisions, both kernels that load after a store, and
    # the literal of the statement it counts in fp64 (`(float)(v * k * 0.5)` is exact in
    # float and converted back at once: an fp32 multiply, as the compiler makes it)
    assert sorted(source["series"]) == [
        ("RL001", 13), ("RL004", 11), ("RL004", 12), ("counts", 0)
    ]  # fmt: skip
    assert ("RL007", 19) in source["correlate"] and ("RL007", 27) in source["twice"]
    ptx = _diagnostics(tmp_path, "compiler")
    # compiled: `(i + k) / step` is a mul.hi (no div), `(float)(v * k * 0.5)` an fp32
    # multiply, and `a[i]` in `twice` the value just stored (no load)
    assert sorted(ptx["series"]) == [("RL001", 13), ("RL004", 11), ("counts", 1)]
    assert ("RL007", 19) in ptx["correlate"]
    assert ptx["twice"] == [("counts", 1)]
