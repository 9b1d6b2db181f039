"""Launch configuration advice (RL010)."""

from __future__ import annotations

from advice_fixtures import run, where


def test_small_launch_configurations() -> None:
    src, adv = run("advice.cu")
    found = where(src, adv, "RL010")
    assert [t for _, t in found] == [
        "alias_kernel<<<4, 16>>>(1024, a, b)",
        "alias_kernel<<<2, 256>>>(512, a, b)",
    ]
    msgs = [a.message for a in adv if a.code == "RL010"]
    assert "16 threads per block" in msgs[0] and "68 SMs" in msgs[1]
