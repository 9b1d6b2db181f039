"""Advice rules and quick fixes on hand-written fixtures, with the verdict's bound forced so
that each rule's dependence on it is tested independently of the estimator."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from roofline_lsp.advice.rules import RULES, Advice, advise
from roofline_lsp.engine.analysis import FileReport, analyze_file
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.syntax.parsing import parse

FIXTURES = Path(__file__).parent / "fixtures" / "lsp"
REG = load_registry()
RTX = REG.get("rtx-3080")
H100 = REG.get("h100")


def report(source: bytes, path: str, bound: str, gpu=RTX) -> FileReport:  # type: ignore[no-untyped-def]
    rep = analyze_file(source, path, (gpu,))
    kernels = tuple(
        dataclasses.replace(kr, verdicts=(dataclasses.replace(kr.verdict, bound=bound),))
        for kr in rep.kernels
    )
    return dataclasses.replace(rep, kernels=kernels)


def run(name: str, bound: str = "bandwidth", gpu=RTX) -> tuple[bytes, tuple[Advice, ...]]:  # type: ignore[no-untyped-def]
    src = (FIXTURES / name).read_bytes()
    return src, advise(report(src, str(FIXTURES / name), bound, gpu), gpu)


def where(src: bytes, advice: tuple[Advice, ...], code: str) -> list[tuple[str, str]]:
    """(kernel, text of the flagged span) of every advice with ``code``."""
    return [(a.kernel, src[a.start : a.end].decode()) for a in advice if a.code == code]


def apply(src: bytes, advice: Advice) -> bytes:
    assert advice.fix is not None
    out = src
    for e in sorted(advice.fix.edits, key=lambda e: e.start, reverse=True):
        out = out[: e.start] + e.new_text.encode() + out[e.end :]
    return out


def has_error(src: bytes) -> bool:
    return parse(src).root_node.has_error


def test_every_rule_has_a_documented_anchor() -> None:
    for code, rule in RULES.items():
        assert rule.code == code and rule.href.endswith(f"#{code.lower()}-{rule.slug}")


def test_fp64_literal_in_fp32_kernel_with_fix() -> None:
    src, adv = run("advice.cu")
    lits = [a for a in adv if a.code == "RL001"]
    assert [(a.kernel, src[a.start : a.end]) for a in lits] == [("literal_kernel", b"0.5")]
    assert lits[0].severity == "information"  # RTX 3080: fp64 at 1/64 of fp32
    fixed = apply(src, lits[0])
    assert b"a * x[i] + 0.5f;" in fixed and not has_error(fixed)
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
    assert all(a.severity == "information" for a in pows)  # compute-bound
    fixed = apply(apply(src, pows[1]), pows[0])
    assert b"y[i] = (x[i] * x[i]) + ((x[i] + 1.0f) * (x[i] + 1.0f));" in fixed
    assert not has_error(fixed)


def test_pow_with_side_effects_gets_no_mechanical_fix() -> None:
    src = b"__global__ void k(float *x) { x[0] = pow(next(x), 2); }\n"
    adv = advise(report(src, "k.cu", "compute"), RTX)
    pows = [a for a in adv if a.code == "RL003"]
    assert len(pows) == 1 and pows[0].fix is None


def test_strided_access_and_reread_follow_the_bound() -> None:
    src, bw = run("advice.cu", "bandwidth")
    assert where(src, bw, "RL008") == [("strided_kernel", "in[i * stride]")]
    assert [a.severity for a in bw if a.code == "RL008"] == ["information"]
    # naive matmul: A's row is re-read by every thread of a row; B is indexed by threadIdx.x
    assert where(src, bw, "RL009") == [("naive_matmul", "A[row * n + k]")]
    _, cb = run("advice.cu", "compute")
    assert [a.severity for a in cb if a.code in ("RL008", "RL009")] == ["hint", "hint"]


def test_atomics_on_one_address() -> None:
    src, adv = run("advice.cu")
    # the block-leader atomic (threadIdx.x == 0) is fine; the per-thread one is not
    assert where(src, adv, "RL005") == [("histogram_kernel", "atomicAdd(&total[0], keys[i])")]


def test_divergence_and_slow_math_only_matter_when_compute_bound() -> None:
    src, cb = run("advice.cu", "compute")
    assert where(src, cb, "RL006") == [("divergent_kernel", "(threadIdx.x % 2 == 0)")]
    assert [a.severity for a in cb if a.code == "RL006"] == ["information"]
    assert [k for k, _ in where(src, cb, "RL004")] == ["divergent_kernel"]
    _, bw = run("advice.cu", "bandwidth")
    assert not [a for a in bw if a.code == "RL004"]
    assert [a.severity for a in bw if a.code == "RL006"] == ["hint"]


def test_missing_restrict_with_fix() -> None:
    src, adv = run("advice.cu")
    found = where(src, adv, "RL007")
    assert ("alias_kernel", "*a") in found and ("alias_kernel", "*b") in found
    assert not [k for k, _ in found if k in ("pow_kernel", "strided_kernel", "naive_matmul")]
    a = next(x for x in adv if x.code == "RL007" and src[x.start : x.end] == b"*a")
    assert "only read" in a.message
    fixed = apply(src, a)
    assert b"alias_kernel(int n, float *__restrict__ a, float *b)" in fixed
    assert not has_error(fixed)


def test_small_launch_configurations() -> None:
    src, adv = run("advice.cu")
    found = where(src, adv, "RL010")
    assert [t for _, t in found] == [
        "alias_kernel<<<4, 16>>>(1024, a, b)",
        "alias_kernel<<<2, 256>>>(512, a, b)",
    ]
    msgs = [a.message for a in adv if a.code == "RL010"]
    assert "16 threads per block" in msgs[0] and "68 SMs" in msgs[1]


def test_map_tofrom_on_read_only_data_and_mapping_in_a_host_loop() -> None:
    src, adv = run("offload.cpp")
    maps = [a for a in adv if a.code == "RL011"]
    assert len(maps) == 1 and "`in` is only read" in maps[0].message
    fixed = apply(src, maps[0])
    assert b"map(tofrom: out[0:n]) map(to: in[0:n]) map(tmp[0:n])" in fixed
    assert not has_error(fixed)
    loops = where(src, adv, "RL012")
    assert [k for k, _ in loops] == ["smooth"]  # `once` maps its data around the loop


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_offload_fix_still_compiles(tmp_path: Path) -> None:
    src, adv = run("offload.cpp")
    fixed = apply(src, next(a for a in adv if a.code == "RL011"))
    for name, data in (("before.cpp", src), ("after.cpp", fixed)):
        path = tmp_path / name
        path.write_bytes(data)
        proc = subprocess.run(
            ["g++", "-fopenmp", "-fsyntax-only", "-Wall", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr


def test_acc_copy_on_read_only_data() -> None:
    src = (
        b"void f(int n, const float *a, float *c) {\n"
        b"#pragma acc parallel loop copy(a[0:n]) copyout(c[0:n])\n"
        b"  for (int i = 0; i < n; i++) c[i] = a[i] * 2.0f;\n}\n"
    )
    adv = advise(report(src, "f.c", "bandwidth"), RTX)
    fixes = [a for a in adv if a.code == "RL011"]
    assert len(fixes) == 1
    assert b"#pragma acc parallel loop copyin(a[0:n]) copyout(c[0:n])" in apply(src, fixes[0])


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


def test_advice_cache_reuses_unchanged_kernels_and_moves_their_advice():
    from roofline_lsp.advice.rules import advise
    from roofline_lsp.engine.analysis import analyze_file
    from roofline_lsp.model.gpus import load_registry

    gpu = load_registry().get("rtx3080")
    src = (
        b"__global__ void a(float *x, float *y) { y[threadIdx.x] = x[threadIdx.x] * 1.5; }\n"
        b"__global__ void b(float *x, float *y) { y[threadIdx.x] = x[threadIdx.x] * 2.5; }\n"
    )
    cache: dict = {}
    first = analyze_file(src, "k.cu", (gpu,))
    advise(first, gpu, cache)
    edited = b"// moved down by a comment\n" + src
    second = analyze_file(edited, "k.cu", (gpu,), previous=first)
    reused = advise(second, gpu, cache)
    fresh = advise(analyze_file(edited, "k.cu", (gpu,)), gpu)
    assert reused == fresh and any(a.code == "RL001" for a in reused)
    assert len(cache) == 2


def test_reused_advice_moves_its_line_references_with_the_kernel():
    from roofline_lsp.advice.rules import advise
    from roofline_lsp.engine.analysis import analyze_file
    from roofline_lsp.model.gpus import load_registry

    gpu = load_registry().get("rtx3080")
    src = (
        b"void step(int n, float *x, int reps)\n{\n"
        b"    for (int r = 0; r < reps; r++) {\n"
        b"        #pragma omp target teams distribute parallel for map(tofrom: x[0:n])\n"
        b"        for (int i = 0; i < n; i++) x[i] = x[i] * 0.5f + 1.0f;\n"
        b"    }\n}\n"
    )
    cache: dict = {}
    first = analyze_file(src, "s.cpp", (gpu,))
    before = advise(first, gpu, cache)
    assert any(a.code == "RL012" and "line 3" in a.message for a in before)
    edited = b"// one\n// two\n" + src
    second = analyze_file(edited, "s.cpp", (gpu,), previous=first)
    assert second.kernels[0].verdicts[0].bound == first.kernels[0].verdicts[0].bound
    reused = advise(second, gpu, cache)
    assert reused == advise(analyze_file(edited, "s.cpp", (gpu,)), gpu)
    assert any(a.code == "RL012" and "line 5" in a.message for a in reused)
