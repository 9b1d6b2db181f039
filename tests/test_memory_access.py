"""Memory access advice (RL007-RL009) on hand-written fixtures, with the verdict's bound
forced."""

from __future__ import annotations

from advice_fixtures import RTX, apply, has_error, report, run, where

from roofline_lsp.advice.advise import advise


def test_strided_access_and_reread_follow_the_bound() -> None:
    src, bw = run("advice.cu", "bandwidth")
    assert where(src, bw, "RL008") == [("strided_kernel", "in[i * stride]")]
    assert [a.severity for a in bw if a.code == "RL008"] == ["information"]
    # naive matmul: A's row is re-read by every thread of a row; B is indexed by threadIdx.x
    assert where(src, bw, "RL009") == [("naive_matmul", "A[row * n + k]")]
    _, cb = run("advice.cu", "compute")
    assert [a.severity for a in cb if a.code in ("RL008", "RL009")] == ["hint", "hint"]


def test_missing_restrict_only_where_aliasing_costs_reloads() -> None:
    src, adv = run("advice.cu")
    # alias_kernel loads before its only store: nothing is reloaded, so no advice
    assert where(src, adv, "RL007") == []
    loop = (
        b"__global__ void k(int n, const float *w, float *out)\n{\n"
        b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        b"    for (int j = 0; j < n; j++) out[i] += w[j];\n}\n"
        b"void go(int n, float *w, float *o) { k<<<n / 256, 256>>>(n, w, o); }\n"
    )
    adv = advise(report(loop, "k.cu", "bandwidth"), RTX)
    [a] = [x for x in adv if x.code == "RL007"]
    assert a.fix is not None and len(a.fix.edits) == 2
    fixed = apply(loop, a)
    assert b"const float *__restrict__ w, float *__restrict__ out" in fixed
    assert not has_error(fixed)
