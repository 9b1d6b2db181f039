"""Atomics and warp divergence advice (RL005, RL006; with RL004, which also depends on the
bound) on hand-written fixtures, with the verdict's bound forced."""

from __future__ import annotations

from advice_fixtures import RTX, report, run, where

from roofline_lsp.advice.advise import advise


def test_atomics_on_one_address() -> None:
    src, adv = run("advice.cu")
    # the block-leader atomic (threadIdx.x == 0) is fine; the per-thread one is not
    assert where(src, adv, "RL005") == [("histogram_kernel", "atomicAdd(&total[0], keys[i])")]


ORDERED_ATOMICS = b"""__global__ void k(const int *x, int *out, unsigned *ring, int *slot, int *lk)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicMax(&out[0], x[i]);
    atomicInc(&ring[0], 17u);
    out[1 + atomicAdd(&slot[0], 1)] = x[i];
    while (atomicCAS(&lk[0], 0, 1) != 0) {}
}
"""


def test_atomics_only_a_reduction_can_replace() -> None:
    # a max of every thread's value: one per block after a reduction gives the same result.
    # An increment that wraps at 17, a slot handed out by the old value and a lock's
    # compare-and-swap say which thread came when: a reduction would change the results
    src = ORDERED_ATOMICS
    adv = advise(report(src, "ordered.cu", "bandwidth"), RTX)
    assert where(src, adv, "RL005") == [("k", "atomicMax(&out[0], x[i])")]


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
