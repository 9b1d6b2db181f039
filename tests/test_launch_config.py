"""Launch configuration advice (RL010)."""

from __future__ import annotations

from advice_fixtures import RTX, report, run, where

from roofline_lsp.advice.advise import advise


def test_small_launch_configurations() -> None:
    src, adv = run("advice.cu")
    # both launches have a constant grid: a tiny fixed-size job, deliberate
    assert where(src, adv, "RL010") == []
    computed = src.replace(b"<<<4, 16>>>(1024", b"<<<n / 16, 16>>>(n").replace(
        b"void launch(float *a", b"void launch(int n, float *a"
    )
    adv = advise(report(computed, "c.cu", "bandwidth"), RTX)
    found = where(computed, adv, "RL010")
    assert [t for _, t in found] == ["alias_kernel<<<n / 16, 16>>>(n, a, b)"]
    msgs = [a.message for a in adv if a.code == "RL010"]
    assert "16 threads per block" in msgs[0]


def test_a_zero_thread_launch_is_no_small_launch() -> None:
    # `<<<n, 0>>>` launches nothing (CUDA rejects it): no advice, and no division by zero
    src, _ = run("advice.cu")
    zero = src.replace(b"<<<4, 16>>>(1024", b"<<<n, 0>>>(n").replace(
        b"void launch(float *a", b"void launch(int n, float *a"
    )
    adv = advise(report(zero, "z.cu", "bandwidth"), RTX)
    assert where(zero, adv, "RL010") == []
