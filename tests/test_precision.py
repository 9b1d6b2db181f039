"""Arithmetic and precision advice (RL001-RL004) on hand-written fixtures, with the verdict's
bound forced."""

from __future__ import annotations

from dataclasses import replace

from advice_fixtures import FIXTURES, H100, RTX, apply, has_error, report, run, with_counts

from roofline_lsp.advice.advise import advise
from roofline_lsp.model.verdict import Counts, LineInstructions


def test_fp64_literal_in_fp32_kernel_with_fix() -> None:
    src, adv = run("advice.cu")
    lits = [a for a in adv if a.code == "RL001"]
    assert [(a.kernel, src[a.start : a.end]) for a in lits] == [("literal_kernel", b"0.5")]
    # RTX 3080: fp64 at 1/64 of fp32, but a hint when the roofline says the fix is worth < 5%
    small = lits[0].gain is not None and lits[0].gain.small
    assert lits[0].severity == ("hint" if small else "information")
    fixed = apply(src, lits[0])
    assert b"a * (x[i] + 0.5f);" in fixed and not has_error(fixed)
    # not flagged in a kernel that is fp64 on purpose
    src64 = (FIXTURES / "fp64_flip.cu").read_bytes()
    rep = report(src64, "fp64_flip.cu", "compute")
    assert not [a for a in advise(rep, RTX) if a.code == "RL001"]


def test_fp64_literal_is_only_a_hint_on_a_full_rate_fp64_gpu() -> None:
    _, adv = run("advice.cu", "bandwidth", H100)
    assert [a.severity for a in adv if a.code == "RL001"] == ["hint"]


def test_pow_square_fixes() -> None:
    src, adv = run("advice.cu", "compute")
    pows = [a for a in adv if a.code == "RL003"]
    assert [src[a.start : a.end] for a in pows] == [b"pow(x[i], 2)", b"powf(x[i] + 1.0f, 2.0f)"]
    # pow(x[i], 2) of a float is C++'s pow(double, double) (an integer argument promotes;
    # nvcc compiles it in FP64): on the RTX 3080's 1:64 FP64 it is most of the kernel, so
    # squaring instead is a real gain; powf(.., 2.0f) is under 5% of it: a hint
    first, second = pows
    assert first.gain is not None and not first.gain.small and first.gain.speedup > 5
    assert first.severity == "information"
    assert second.gain is not None and second.gain.small and second.severity == "hint"
    fixed = apply(apply(src, pows[1]), pows[0])
    # the square of a float stays in double, as pow(double, double) computed it (exactly)
    assert b"y[i] = ((double)x[i] * x[i]) + ((x[i] + 1.0f) * (x[i] + 1.0f));" in fixed
    assert not has_error(fixed)


def test_pow_square_keeps_the_precision_pow_computed_in() -> None:
    # pow(float, int) and pow(float, double) are pow(double, double): the square stays double;
    # pow(float, float) and powf are float, pow of a double is double: a plain multiply
    src = (
        b"__global__ void k(float *x, double *d) {\n"
        b"  x[0] = pow(x[1], 2.0) + pow(x[2], 2.0f) + powf(x[3], 2);\n"
        b"  d[0] = pow(d[1], 2);\n"
        b"}\n"
    )
    adv = advise(report(src, "k.cu", "compute"), RTX)
    fixes = [a.fix.edits[0].new_text for a in adv if a.code == "RL003" and a.fix is not None]
    assert fixes == ["((double)x[1] * x[1])", "(x[2] * x[2])", "(x[3] * x[3])", "d[1] * d[1]"]


def test_pow_with_side_effects_gets_no_mechanical_fix() -> None:
    src = b"__global__ void k(float *x) { x[0] = pow(next(x), 2); }\n"
    adv = advise(report(src, "k.cu", "compute"), RTX)
    pows = [a for a in adv if a.code == "RL003"]
    assert len(pows) == 1 and pows[0].fix is None


def test_ptx_counts_confirm_divisions_and_fp64_literals_per_line() -> None:
    """With PTX counts, a division is advice only where its statement compiles to a
    `div`/`rem`, a double literal only where it is compiled to fp64 (hand-made facts here;
    tests/test_advice_ptx.py compiles with a real nvcc)."""
    src = b"""__global__ void k(float *__restrict__ y, const float *__restrict__ x, float c, int d)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i], acc = 0.0f;
    for (int j = 0; j < 100; j++) {
        acc += v / (c + j) + (i + j) / d;
        acc += v * 0.1;
    }
    y[i] = acc;
}
"""

    def codes(facts: dict[int, LineInstructions]) -> list[tuple[str, int]]:
        counts = Counts({"fp32": 10.0, "fp64": 1.0}, 1.0, 4.0, 4.0, counts_from="ptx")
        rep = with_counts(report(src, "k.cu", "compute"), replace(counts, line_ptx=facts))
        return [(a.code, src[: a.start].count(b"\n") + 1) for a in advise(rep, RTX)]

    both = codes({5: LineInstructions(divisions=2), 6: LineInstructions(to_fp64=1)})
    assert sorted(both) == [("RL001", 7), ("RL004", 6)]
    assert codes({}) == []  # no div, no fp64 on these lines: the compiler made them cheap
