"""Memory access advice (RL007-RL009) on hand-written fixtures, with the verdict's bound
forced."""

from __future__ import annotations

from advice_fixtures import apply, has_error, run, where


def test_strided_access_and_reread_follow_the_bound() -> None:
    src, bw = run("advice.cu", "bandwidth")
    assert where(src, bw, "RL008") == [("strided_kernel", "in[i * stride]")]
    assert [a.severity for a in bw if a.code == "RL008"] == ["information"]
    # naive matmul: A's row is re-read by every thread of a row; B is indexed by threadIdx.x
    assert where(src, bw, "RL009") == [("naive_matmul", "A[row * n + k]")]
    _, cb = run("advice.cu", "compute")
    assert [a.severity for a in cb if a.code in ("RL008", "RL009")] == ["hint", "hint"]


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
