"""Each rule's textbook positives and near misses (``tests/fixtures/advice``): through the
engine's analysis with source counts, every ``// expect RLnnn`` line gets that diagnostic and
nothing else is flagged; no quick fix of the fixtures changes what the program computes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roofline_lsp.advice.advise import advise
from roofline_lsp.engine.analysis import analyze_file
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.verdict import LineInstructions

FIXTURES = Path(__file__).parent / "fixtures" / "advice"
CASES = sorted(FIXTURES.glob("rl*"))


def _expected(text: str) -> set[tuple[int, str]]:
    out = set()
    for i, line in enumerate(text.splitlines(), 1):
        m = re.search(r"//\s*expect\s+((?:RL\d{3}[ ,]*)+)", line)
        if m:
            out.update((i, code) for code in re.findall(r"RL\d{3}", m.group(1)))
    return out


def _advice(path: Path):  # type: ignore[no-untyped-def]
    src = path.read_bytes()
    m = re.match(r"//\s*gpu:\s*(\S+)", src.decode())
    gpu = load_registry().get(m.group(1) if m else "h100")
    return src, advise(analyze_file(src, str(path), (gpu,)), gpu)


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_fixture_gets_exactly_its_expected_diagnostics(path: Path) -> None:
    src, advice = _advice(path)
    found = {(src.count(b"\n", 0, a.start) + 1, a.code) for a in advice}
    assert found == _expected(path.read_text())


def test_every_rule_has_a_fixture_with_positives_and_near_misses() -> None:
    for code in [f"RL{n:03d}" for n in range(1, 13)]:
        texts = [p.read_text() for p in CASES]
        assert any(re.search(rf"expect[^\n]*{code}", t) for t in texts), code
        assert any(f"near-miss {code}" for t in texts if f"near-miss {code}" in t), code


def test_row_pointer_writes_are_never_offered_map_to() -> None:
    src, advice = _advice(FIXTURES / "rl011_map_tofrom.cpp")
    fixes = [
        " ".join(e.new_text for e in a.fix.edits) for a in advice if a.code == "RL011" and a.fix
    ]
    assert "map(tofrom: c[0:n*n]) map(to: a[0:n*n])" in fixes
    assert not any("map(to: c" in f for f in fixes)


def test_restrict_fix_is_withheld_when_a_launch_aliases_two_parameters() -> None:
    src = (
        b"__global__ void acc(int n, float *a, float *b)\n{\n"
        b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        b"    for (int k = 0; k < n; k++) { a[i] += b[k]; }\n}\n"
        b"void run(int n, float *p, float *q) { acc<<<n / 256, 256>>>(n, p, q); }\n"
    )
    gpu = load_registry().get("h100")
    advice = advise(analyze_file(src, "a.cu", (gpu,)), gpu)
    fixes = [a.fix for a in advice if a.code == "RL007"]
    assert len(fixes) == 1 and fixes[0] is not None
    aliased = src.replace(b"(n, p, q)", b"(n, p, p)")
    advice = advise(analyze_file(aliased, "a.cu", (gpu,)), gpu)
    assert not [a for a in advice if a.code == "RL007"]


def test_inexact_fp64_literal_gets_no_quick_fix() -> None:
    src = (
        b"__global__ void s(int n, const float *__restrict__ x, float *__restrict__ y)\n{\n"
        b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        b"    if (i < n) y[i] = x[i] * 0.1 + x[i] * 0.5;\n}\n"
    )
    gpu = load_registry().get("h100")
    advice = [a for a in advise(analyze_file(src, "s.cu", (gpu,)), gpu) if a.code == "RL001"]
    fixed = {src[a.start : a.end].decode(): a.fix is not None for a in advice}
    assert fixed == {"0.1": False, "0.5": True}


def test_fp64_literal_only_where_the_compiler_keeps_fp64() -> None:
    # nvcc -arch=sm_86 -ptx: `x[i] * 0.5` stored into a float is mul.f32 and `x[i] > 0.5` a
    # setp.f32 (no RL001); `x[i] > 0.1` converts x and compares in fp64, and `x[i] * 0.5
    # + y[i]` multiplies and adds in fp64 (RL001 on 0.1 and on that 0.5)
    src = (
        b"__global__ void s(int n, const float *__restrict__ x, float *__restrict__ y)\n{\n"
        b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        b"    if (i < n) y[i] = x[i] * 0.5;\n"
        b"    if (x[i] > 0.5) y[i] = 0.f;\n"
        b"    if (x[i] > 0.1) y[i] = 1.f;\n"
        b"    y[i + 1] = x[i] * 0.5 + y[i];\n}\n"
    )
    gpu = load_registry().get("rtx3080")
    advice = [a for a in advise(analyze_file(src, "s.cu", (gpu,)), gpu) if a.code == "RL001"]
    flagged = sorted((a.start, src[a.start : a.end]) for a in advice)
    assert [lit for _start, lit in flagged] == [b"0.1", b"0.5"]
    assert flagged[1][0] > src.index(b"y[i + 1]")


def test_advice_is_ordered_by_impact_and_small_gains_are_hints() -> None:
    from roofline_lsp.advice.catalogue import by_impact

    src, advice = _advice(FIXTURES / "rl008_coalescing.cu")
    ranked = by_impact(advice)
    ranks = [a.rank for a in ranked if a.severity == "information"]
    assert ranks == sorted(ranks, reverse=True)
    for a in advice:
        if a.gain is not None and a.gain.speedup is not None and a.gain.speedup < 1.05:
            assert a.severity == "hint"


def test_fp64_literal_is_not_flagged_when_the_ptx_has_no_fp64_instruction() -> None:
    import dataclasses

    path = FIXTURES / "rl001_fp64_literal.cu"
    src = path.read_bytes()
    gpu = load_registry().get("rtx3080")
    report = analyze_file(src, str(path), (gpu,))

    def with_counts(fp64: float) -> object:
        kernels = []
        for kr in report.kernels:
            v = kr.verdict
            assert v.counts is not None
            flops = {**v.counts.flops, "fp64": fp64}
            # with fp64 instructions, every line of the kernel converts to double
            facts = {o: LineInstructions(to_fp64=1) for o in range(8)} if fp64 else {}
            counts = dataclasses.replace(v.counts, flops=flops, counts_from="ptx", line_ptx=facts)
            kernels.append(
                dataclasses.replace(kr, verdicts=(dataclasses.replace(v, counts=counts),))
            )
        return dataclasses.replace(report, kernels=tuple(kernels))

    folded = advise(with_counts(0.0), gpu)  # type: ignore[arg-type]
    assert not [a for a in folded if a.code == "RL001"]
    kept = advise(with_counts(2.0), gpu)  # type: ignore[arg-type]
    assert [a for a in kept if a.code == "RL001"]


def test_each_division_is_offered_only_what_applies_to_it() -> None:
    """`i / w` on ints: a reciprocal or `__fdividef` would change the quotient; the advice
    offers what keeps it (a precomputed fast divisor, or two loop dimensions). A float
    division gets a reciprocal hoisted out of the loop only when its divisor is the same on
    every trip (`(v + k) / c`, not `v / (c + k)`)."""
    src, advice = _advice(FIXTURES / "rl004_slow_math.cu")
    by_text = {src[a.start : a.end].decode(): a.message for a in advice if a.code == "RL004"}
    assert "__fdividef" in by_text["v / (c + k)"]
    # the divisor changes every trip: no reciprocal computed once serves the loop
    assert "reciprocal" not in by_text["v / (c + k)"]
    assert "reciprocal computed once outside the loop" in by_text["(v + k) / c"]
    integer = by_text["i / w"]
    assert integer.startswith("integer division by a run-time value")
    assert "same quotient" in integer
    assert "reciprocal" not in integer and "__fdividef" not in integer
