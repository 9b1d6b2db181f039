"""What a fix is worth from the roofline model (advice/impact.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from advice_fixtures import ROUND, report, with_counts

from roofline_lsp.advice.advise import advise
from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.advice.impact import (
    fewer_dram_bytes,
    fp64_to_fp32,
    without_dram_bytes,
)
from roofline_lsp.engine.analysis import analyze_file
from roofline_lsp.estimate.launch_time import roof_time
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.verdict import Counts

RTX = load_registry().get("rtx3080")
ADVICE = Path(__file__).parent / "fixtures" / "advice"


def test_time_is_the_slowest_roof() -> None:
    t = roof_time(RTX, {"fp32": 1.0}, 0.0, 1000.0)
    assert t == pytest.approx(1000.0 / RTX.dram_bandwidth)


def test_fp64_moved_to_fp32_on_a_low_fp64_rate_gpu() -> None:
    heavy = Counts({"fp64": 1000.0, "fp32": 0.0}, 0.0, 8.0, 8.0)
    g = fp64_to_fp32(RTX, heavy)
    assert g is not None and g.speedup is not None and g.speedup > 10
    light = Counts({"fp64": 0.01, "fp32": 1.0}, 0.0, 8.0, 8.0)
    small = fp64_to_fp32(RTX, light)
    assert small is not None and small.small  # bandwidth-bound: under 5%
    assert fp64_to_fp32(RTX, Counts({"fp32": 1.0}, 0.0, 8.0, 8.0)) is None


def test_uncoalesced_bytes() -> None:
    c = Counts({"fp32": 1.0}, 1.0, 8.0, 4.0)
    g = fewer_dram_bytes(RTX, c, 3.5)
    assert g is not None and g.fewer_bytes == 4.5 and g.speedup == 4.5


# What each rule's fix is worth, on hand-made counts and the round-number GPU of
# advice_fixtures (fp32 and int 1e12/s, 100 GB/s, 1 GHz): every figure is derived by hand in
# the comment above its assertion. ``line_ops`` / ``line_runs`` are keyed by the offset from
# the kernel's first line.


def _advise(src: bytes, counts: Counts, bound: str = "compute") -> tuple[Advice, ...]:
    return advise(with_counts(report(src, "gain.cu", bound, ROUND), counts), ROUND)


def _one(advice: tuple[Advice, ...], code: str) -> Advice:
    found = [a for a in advice if a.code == code]
    assert len(found) == 1, found
    return found[0]


LOOP = b"""__global__ void k(float *__restrict__ y, const float *__restrict__ x, float c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i], acc = 0.0f;
    for (int j = 0; j < n; j++) {
        acc += powf(v + j, 2.0f);
        acc += sinf(v * j) / (c + j);
    }
    y[i] = acc;
}
"""


def test_sectors_the_estimate_charged_are_what_the_fix_removes() -> None:
    # 36 B per thread counted, 28 of them the partly used sectors of an uncoalesced load
    # (a 32 B sector for a 4 B element): the fix leaves 8 B, 4.5x fewer bytes, 4.5x faster
    # for a bandwidth-bound kernel
    c = Counts({"fp32": 1.0}, 1.0, 32.0, 4.0)
    g = without_dram_bytes(RTX, c, 28.0)
    assert g is not None and (g.fewer_bytes, g.speedup) == (4.5, 4.5)
    assert without_dram_bytes(RTX, c, 0.0) is None


def test_rl008_quotes_the_sectors_the_estimate_charged() -> None:
    # first_of_rows on an RTX 3080: m[i * 64] for 65,536 threads, each a 32 B sector for a
    # 4 B element (2 MiB, not 256 KiB); the sums s[i] 256 KiB, half of it written back (the
    # working set fits L2); the 4 kB launch floor. 2,232,320 B before, 397,312 B once the
    # sectors are used whole: 5.6x
    path = ADVICE / "rl008_sectors.cu"
    src = path.read_bytes()
    (a,) = [
        x
        for x in advise(analyze_file(src, str(path), (RTX,)), RTX)
        if x.code == "RL008" and b"first_of_rows" in src[: x.start]
    ]
    assert a.gain is not None and a.gain.fewer_bytes == pytest.approx(
        (2 * 2**20 + 2**17 + 4096) / (2**18 + 2**17 + 4096), rel=0.01
    )


def test_pow_square_is_worth_the_pow_calls_of_its_line() -> None:
    # line +5 runs 100 times per thread; powf costs 62 fp32 + 12 int, x * x one FLOP:
    # 6100 fp32 and 1200 int fewer. Before: max(7200/1e12, 2000/1e12, 8/1e11) = 7.2e-9 s;
    # after: max(1100/1e12, 800/1e12) = 1.1e-9 s: 7200/1100 = 6.55x
    counts = Counts(
        {"fp32": 7200.0},
        2000.0,
        4.0,
        4.0,
        line_ops={5: (0.0, 6300.0, 0.0, 1200.0)},
        line_runs={5: 100.0},
    )
    g = _one(_advise(LOOP, counts), "RL003").gain
    assert g is not None and g.speedup == 6.55 and g.gpu == "ROUND"


def test_slow_math_is_worth_every_slow_operation_of_its_line() -> None:
    # line +6, 100 runs: sinf 20 fp32 + 10 int -> __sinf 1 fp32; a / 10 fp32 + 2 int ->
    # a multiply: 28 fp32 and 12 int fewer per run, 2800 and 1200 per thread. Before
    # 5000/1e12 = 5e-9 s, after max(2200, 300)/1e12 = 2.2e-9 s: 2.27x
    counts = Counts(
        {"fp32": 5000.0},
        1500.0,
        4.0,
        4.0,
        line_ops={6: (0.0, 3400.0, 0.0, 1200.0)},
        line_runs={6: 100.0},
    )
    a = _one(_advise(LOOP, counts), "RL004")
    assert a.gain is not None and a.gain.speedup == 2.27
    assert a.message.endswith("(est. up to 2.3x faster on ROUND)")
    # never more than the line costs: the same line booked with 1000 fp32 and 100 int saves
    # only those: after max(4000, 1400)/1e12 s: 5000/4000 = 1.25x
    capped = Counts(
        {"fp32": 5000.0},
        1500.0,
        4.0,
        4.0,
        line_ops={6: (0.0, 1000.0, 0.0, 100.0)},
        line_runs={6: 100.0},
    )
    g = _one(_advise(LOOP, capped), "RL004").gain
    assert g is not None and g.speedup == 1.25


def test_slow_math_without_a_fast_form_is_an_upper_bound() -> None:
    # fmodf has no intrinsic: at most its whole cost, 20 fp32 + 10 int per call, 100 runs:
    # 2000 fp32 and 1000 int fewer. Before 5000/1e12 s, after max(3000, 500)/1e12 s: 1.67x
    src = LOOP.replace(b"sinf(v * j) / (c + j)", b"fmodf(v, c + j)")
    counts = Counts(
        {"fp32": 5000.0},
        1500.0,
        4.0,
        4.0,
        line_ops={6: (0.0, 2100.0, 0.0, 1000.0)},
        line_runs={6: 100.0},
    )
    a = _one(_advise(src, counts), "RL004")
    assert a.gain is not None and a.gain.speedup == 1.67
    assert a.message.endswith("(est. up to 1.7x faster on ROUND, at most the calls' whole cost)")


def test_slow_math_without_line_counts_has_no_figure() -> None:
    counts = Counts({"fp32": 5000.0}, 1500.0, 4.0, 4.0)
    assert _one(_advise(LOOP, counts), "RL004").gain is None


ATOMIC = b"""__global__ void k(const float *x, float *total)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&total[0], x[i]);
}
"""


def test_same_address_atomics_serialize_beside_the_roofline() -> None:
    # 1e6 threads, 8 DRAM bytes each: 1e6 * 8 / 1e11 = 8e-5 s on the roofline; 1e6 updates
    # of one address at one per 3.2 clocks of 1 GHz: 3.2e-3 s. After a warp reduction
    # 3.2e-3/32 = 1e-4 s > 8e-5 s: 3.2e-3 / 1e-4 = 32x
    counts = Counts({"fp32": 1.0}, 2.0, 4.0, 4.0, threads=1e6, line_runs={3: 1.0})
    a = _one(_advise(ATOMIC, counts, "bandwidth"), "RL005")
    assert a.gain is not None and a.gain.speedup == 32.0
    assert "one update of an address every 3.2 clocks" in a.message
    # 100 threads of 4000 fp32 each: roofline 100 * 4e-9 = 4e-7 s, serial 100 * 3.2 / 1e9 =
    # 3.2e-7 s, after max(4e-7, 1e-8) = 4e-7 s: 1.0x, a hint
    small = Counts({"fp32": 4000.0}, 2.0, 4.0, 4.0, threads=100.0, line_runs={3: 1.0})
    b = _one(_advise(ATOMIC, small, "bandwidth"), "RL005")
    assert b.gain is not None and b.gain.speedup == 1.0 and b.severity == "hint"


DIVERGE = b"""__global__ void k(const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if (threadIdx.x % 2 == 0) {
        v = v * v + 1.0f;
    }
    y[i] = v;
}
"""


def test_divergence_is_worth_at_most_the_work_of_its_branch() -> None:
    # the branch body (line +5) has 500 of the thread's 1000 fp32: after at most 500:
    # 1000/500 = 2x, said to be an upper bound
    counts = Counts({"fp32": 1000.0}, 10.0, 4.0, 4.0, line_ops={5: (0.0, 500.0, 0.0, 0.0)})
    a = _one(_advise(DIVERGE, counts), "RL006")
    assert a.gain is not None and a.gain.speedup == 2.0
    assert "at most the branch's own work" in a.message


def test_restrict_counts_the_reloads_it_saves() -> None:
    # `out[i] += w[j] * in[i + j]` (line +5 of correlate) loads three values after a store
    # through another parameter, 64 times per thread: 192 reloads; no roofline figure
    src = (ADVICE / "rl007_restrict.cu").read_bytes()
    counts = Counts({"fp32": 128.0}, 10.0, 8.0, 4.0, line_runs={5: 64.0})
    rep = with_counts(report(src, "rl007_restrict.cu", "bandwidth", ROUND), counts)
    a = _one(advise(rep, ROUND), "RL007")
    assert a.gain is not None and a.gain.speedup is None and a.rank == 1.0
    assert "up to 192 fewer L1 reloads per thread" in a.message


def test_data_clause_advice_says_it_is_outside_the_roofline() -> None:
    src = (ADVICE / "rl011_map_tofrom.cpp").read_bytes()
    counts = Counts({"fp32": 1.0}, 1.0, 8.0, 4.0, per="iteration")
    rep = with_counts(report(src, "rl011_map_tofrom.cpp", "bandwidth", ROUND), counts)
    found = [a for a in advise(rep, ROUND) if a.code == "RL011"]
    assert found and all("device-to-host cop" in a.message for a in found)
    assert all("outside the kernel's roofline" in a.message for a in found)
    src = (ADVICE / "rl012_map_in_loop.cpp").read_bytes()
    rep = with_counts(report(src, "rl012_map_in_loop.cpp", "bandwidth", ROUND), counts)
    found = [a for a in advise(rep, ROUND) if a.code == "RL012"]
    assert found and all("transferred once instead of on every" in a.message for a in found)
