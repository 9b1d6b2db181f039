"""Advice does work linear in the size of a kernel on hostile input (issue #18): a 100 KB
line (an 8,000-term sum, a tree 8,000 deep) and 3,000 nested loops. The operations the
rules repeat per node, looking up a parent and a value's lanes, are counted; no time is
measured (speed is in ``benchmarks/check_hostile.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hostile_files import long_line, nested_loops

from roofline_lsp.advice.advise import advise
from roofline_lsp.advice.lanes import LaneAnalysis
from roofline_lsp.advice.nodes import BodyIndex
from roofline_lsp.engine.analysis import analyze_file
from roofline_lsp.model.gpus import GpuProfile


def counted(monkeypatch: pytest.MonkeyPatch, cls: type, name: str, calls: list[int]) -> None:
    """Count the calls of ``cls.name`` in ``calls[0]``."""
    method: Callable[..., Any] = getattr(cls, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return method(*args, **kwargs)

    monkeypatch.setattr(cls, name, wrapper)


def advice_work(
    monkeypatch: pytest.MonkeyPatch, gpu: GpuProfile, src: str, path: str
) -> tuple[int, int, int]:
    """(parent look-ups, lane evaluations, nodes of the kernel bodies) of ``advise``."""
    report = analyze_file(src.encode(), path, (gpu,))
    size = sum(len(BodyIndex(kr.kernel.body).nodes) for kr in report.kernels)
    parents, lanes = [0], [0]
    counted(monkeypatch, BodyIndex, "parent", parents)
    counted(monkeypatch, LaneAnalysis, "of", lanes)
    advise(report, gpu)
    return parents[0], lanes[0], size


def test_a_100kb_line_takes_linear_work(monkeypatch: pytest.MonkeyPatch, gpu: GpuProfile) -> None:
    parents, lanes, size = advice_work(monkeypatch, gpu, long_line(100_000), "long.cu")
    assert size > 50_000
    # the quadratic walk up from every subscript of the sum made ~size**2 / 2 look-ups
    assert parents <= 4 * size
    assert lanes <= 20 * size


def test_3000_nested_loops_take_bounded_work(
    monkeypatch: pytest.MonkeyPatch, gpu: GpuProfile
) -> None:
    """Nested beyond nodes.MAX_NESTING: no advice, and no walk up thousands of loops from
    every assignment; a nest within it is analysed as before."""
    parents, lanes, size = advice_work(monkeypatch, gpu, nested_loops(3000), "nest.cpp")
    assert size > 50_000
    assert parents <= 4 * size
    assert lanes <= 20 * size
    shallow = analyze_file(nested_loops(20).encode(), "n.cpp", (gpu,))
    assert not BodyIndex(shallow.kernels[0].kernel.body).too_deep
    assert BodyIndex(
        analyze_file(nested_loops(3000).encode(), "m.cpp", (gpu,)).kernels[0].kernel.body
    ).too_deep
