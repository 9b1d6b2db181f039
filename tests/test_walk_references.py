"""Memory references of ``walk_references.py`` (subscripts, fields, members) on small
sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import count


def test_this_arrow_a_member_reads_the_member(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # an inline method's region reads this->u[i] twice and this->dt: per iteration one
    # FP32 multiply and one add (2 FLOP, an FMA), u and w 4096 floats each (the map sections with
    # n = 4096): 32 kB referenced. Before, this->u was no known buffer and dt no float
    src = (
        "class Solver {\n"
        " public:\n"
        "  float *u; float *w; int n; float dt;\n"
        "  void step() {\n"
        "    #pragma omp target teams distribute parallel for map(to: this->u[0:n]) \\\n"
        "      map(from: this->w[0:n])\n"
        "    for (int i = 0; i < this->n; i++) this->w[i] = this->u[i] + this->dt * this->u[i];\n"
        "  }\n"
        "};\n"
    )
    a = count(gpu, tmp_path, src, name="solver.cpp", values=(("n", "4096"),))
    assert a.counts.flops["fp32"] == pytest.approx(2)
    assert sorted(b.buffer for b in a.memory.buffers) == ["u", "w"]
    assert sum(b.footprint for b in a.memory.buffers) == 2 * 4096 * 4
