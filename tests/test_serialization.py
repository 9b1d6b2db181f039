"""Atomics and warp divergence advice (RL005, RL006; with RL004, which also depends on the
bound) on hand-written fixtures, with the verdict's bound forced."""

from __future__ import annotations

from advice_fixtures import run, where


def test_atomics_on_one_address() -> None:
    src, adv = run("advice.cu")
    # the block-leader atomic (threadIdx.x == 0) is fine; the per-thread one is not
    assert where(src, adv, "RL005") == [("histogram_kernel", "atomicAdd(&total[0], keys[i])")]


def test_divergence_and_slow_math_only_matter_when_compute_bound() -> None:
    src, cb = run("advice.cu", "compute")
    assert where(src, cb, "RL006") == [("divergent_kernel", "(threadIdx.x % 2 == 0)")]
    # the bound is forced here; the estimate still comes from the counts (worth < 5%: a hint)
    assert [a.severity for a in cb if a.code == "RL006"] == [
        "hint" if a.gain is not None and a.gain.small else "information"
        for a in cb
        if a.code == "RL006"
    ]
    assert [k for k, _ in where(src, cb, "RL004")] == ["divergent_kernel"]
    _, bw = run("advice.cu", "bandwidth")
    assert not [a for a in bw if a.code == "RL004"]
    assert [a.severity for a in bw if a.code == "RL006"] == ["hint"]
