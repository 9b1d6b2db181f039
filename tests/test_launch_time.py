"""The time of a launch (throughput or latency) and the display engine's DRAM traffic during it.

RTX 3080 profile: 68 SMs at 1.44 GHz, FP32 25.06752 TFLOP/s, INT 12.53376 TOP/s, 760.3 GB/s,
FP64 391.68 GFLOP/s, a 20 MB frame read every refresh at 60 Hz; 1536 resident threads per SM,
so a wave is 104448 threads. Its lanes per SM (peak / (2 x 1.44 GHz x 68)): 128 FP32, 64 INT,
2 FP64, so a warp's instruction holds its pipe 32 / lanes = 0.25, 0.5 and 16 cycles on top of
the 32 cycles of a dependent instruction. The H100 profile has no display.
"""

from __future__ import annotations

import pytest

from roofline_lsp.estimate.launch_time import (
    contended_updates,
    display_bytes,
    global_loads,
    l1_wavefronts,
    launch_time,
)
from roofline_lsp.estimate.thread_counts import Access
from roofline_lsp.model.gpus import load_registry

CYCLES = 32.0
PER_SM = 1536


@pytest.fixture(scope="module")
def rtx():  # type: ignore[no-untyped-def]
    return load_registry().get("rtx3080")


def _time(gpu, totals, dram, threads):  # type: ignore[no-untyped-def]
    return launch_time(totals, dram, threads, gpu, dependent_cycles=CYCLES, threads_per_sm=PER_SM)


def test_a_few_threads_run_at_their_latency(rtx) -> None:  # type: ignore[no-untyped-def]
    # 256 threads of 10^6 integer ops each: one wave, 10^6 x 32.5 cycles / 1.44 GHz = 22.6 ms;
    # the INT roof would take 2.56e8 / 12.53376e12 = 20.4 us.
    t = _time(rtx, {"int": 256e6}, 1024.0, 256.0)
    assert t.limit == "latency"
    assert t.seconds == pytest.approx(1e6 * 32.5 / 1.44e9)


def test_flops_count_as_half_an_instruction(rtx) -> None:  # type: ignore[no-untyped-def]
    # 32 threads of 2 x 10^6 FP32 FLOP (10^6 FMAs): 10^6 instructions of 32.25 cycles, 22.4 ms
    t = _time(rtx, {"fp32": 32 * 2e6, "int": 0.0}, 0.0, 32.0)
    assert t.seconds == pytest.approx(1e6 * 32.25 / 1.44e9)


def test_fp64_holds_a_warp_on_two_lanes(rtx) -> None:  # type: ignore[no-untyped-def]
    # the same 10^6 FMAs a thread in FP64: 2 lanes an SM take a warp's 32 threads in 16
    # cycles, 48 a dependent instruction: 33.3 ms, 1.5x the FP32 time
    t = _time(rtx, {"fp64": 32 * 2e6}, 0.0, 32.0)
    assert t.limit == "latency"
    assert t.seconds == pytest.approx(1e6 * 48 / 1.44e9)


def test_a_full_gpu_runs_at_its_slowest_roof(rtx) -> None:  # type: ignore[no-untyped-def]
    # 2^24 threads of 10 integer ops moving 7.603 GB: DRAM 7.603e9 / 760.3e9 = 10 ms; the
    # latency, 161 waves x 10 x 32.5 cycles / 1.44 GHz = 36.3 us, is far shorter
    t = _time(rtx, {"int": 10.0 * 2**24}, 7.603e9, float(2**24))
    assert t.limit == "throughput"
    assert t.seconds == pytest.approx(0.01)
    # at the 72% of the peak a launch sustains: 13.9 ms
    t = launch_time({"int": 10.0 * 2**24}, 7.603e9, float(2**24), rtx, dependent_cycles=CYCLES,
                    threads_per_sm=PER_SM, dram_efficiency=0.72)  # fmt: skip
    assert t.seconds == pytest.approx(0.01 / 0.72)


def test_waves_of_resident_threads_add_up(rtx) -> None:  # type: ignore[no-untyped-def]
    # 104449 threads are two waves of 104448: twice one wave's latency
    one = _time(rtx, {"int": 1e4 * 104448}, 0.0, 104448.0).seconds
    two = _time(rtx, {"int": 1e4 * 104449}, 0.0, 104449.0).seconds
    assert one == pytest.approx(1e4 * 32.5 / 1.44e9)
    assert two == pytest.approx(2 * one)


def test_the_busy_threads_carry_the_work(rtx) -> None:  # type: ignore[no-untyped-def]
    # an offloaded loop of 100 iterations of 10^6 integer ops over 256 teams of 256 threads:
    # 100 threads walk 10^6 x 32.5 cycles each (22.6 ms), not 65536 threads 1.5 k each
    # (34.4 us); each of the 65536 threads also runs 50 ops of the runtime's own, 50 x 32.5
    # cycles more on the chain and 3.3 M more ops on the INT roof
    t = launch_time({"int": 1e8}, 0.0, 65536.0, rtx, dependent_cycles=CYCLES,
                    threads_per_sm=PER_SM, busy_threads=100.0, thread_ints=50.0)  # fmt: skip
    assert t.limit == "latency"
    assert t.seconds == pytest.approx((1e6 + 50) * 32.5 / 1.44e9)
    # all busy: the work spread over the 65536 threads, one wave
    t = launch_time({"int": 1e8}, 0.0, 65536.0, rtx, dependent_cycles=CYCLES,
                    threads_per_sm=PER_SM, thread_ints=50.0)  # fmt: skip
    assert t.seconds == pytest.approx((1e8 / 65536 + 50) * 32.5 / 1.44e9)


def test_a_thread_waits_on_its_loads(rtx) -> None:  # type: ignore[no-untyped-def]
    # 4096 threads (one wave), each 65536 integer ops and 32768 loads from global memory of
    # 200 cycles each: (65536 x 32.5 + 32768 x 200) cycles / 1.44 GHz = 6.03 ms, where the
    # integer ops alone take 1.48 ms
    threads = 4096.0
    totals = {"int": 65536 * threads}
    t = launch_time(totals, 0.0, threads, rtx, dependent_cycles=CYCLES, threads_per_sm=PER_SM,
                    loads=32768 * threads, load_cycles=200.0)  # fmt: skip
    assert t.limit == "latency"
    assert t.seconds == pytest.approx((65536 * 32.5 + 32768 * 200) / 1.44e9)
    assert _time(rtx, totals, 0.0, threads).seconds == pytest.approx(65536 * 32.5 / 1.44e9)


def test_loads_that_wait_on_l2() -> None:
    # per thread: 3 loads of a thread's own element, 8 of one element the whole warp reads
    # (an L1 hit after the first warp), 2 whose lanes' addresses are unknown, a store and a
    # shared-memory load: 5 loads a thread wait on L2, 5000 for 1000 threads
    own = Access("a", "global", 4, "load", 3.0, 1e3, 1, "i", lane_stride=1.0)
    same = Access("b", "global", 4, "load", 8.0, 1.0, 2, "j", lane_stride=0.0)
    unknown = Access("c", "global", 4, "load", 2.0, None, 3, "k[i]")
    store = Access("a", "global", 4, "store", 1.0, 1e3, 4, "i", lane_stride=1.0)
    shared = Access("t", "shared", 4, "load", 16.0, 256.0, 5, "i", lane_stride=1.0)
    assert global_loads([own, same, unknown, store, shared], 1000.0) == 5000.0


def test_wavefronts_of_warp_accesses() -> None:
    # per warp access (1000 threads: 31.25 warps): consecutive floats 1 line; float4s 4;
    # a thread's own 64-byte struct (16 floats apart) 16 lines; one address 1; an unknown
    # stride 1; threads apart (a sector each) 32; a field of each thread's own 64-byte
    # struct (``a[i].x``, ``lane_bytes``) 16. Shared memory: consecutive floats 1,
    # doubles 2 (256 bytes), floats 32 apart all in one bank: 32; 33 apart: no conflict, 1
    def acc(space: str, elem: int, stride: float | None) -> Access:
        return Access("a", space, elem, "load", 2.0, None, 1, "i", lane_stride=stride)

    cases = [
        (acc("global", 4, 1.0), 1), (acc("global", 16, 1.0), 4), (acc("global", 4, 16.0), 16),
        (acc("global", 4, 0.0), 1), (acc("global", 4, None), 1),
        (acc("global", 4, float("inf")), 32), (acc("shared", 4, 1.0), 1),
        (acc("shared", 8, 1.0), 2), (acc("shared", 4, 32.0), 32), (acc("shared", 4, 33.0), 1),
        (acc("local", 4, 1.0), 0),
        (Access("a", "global", 4, "load", 2.0, None, 1, "a[i].x", lane_bytes=64.0), 16),
    ]  # fmt: skip
    for a, per_warp in cases:
        assert l1_wavefronts([a], 1000.0) == pytest.approx(2 * per_warp * 1000 / 32), a


def test_strided_accesses_wait_on_the_sms_data_path(rtx) -> None:  # type: ignore[no-untyped-def]
    # 16 blocks of 256 threads each walking its own 64-byte struct 4096 times, 48 accesses
    # an iteration (16 loads of src, 16 loads and 16 stores of dest): 16 lines a warp access,
    # 128 warps x 4096 x 48 x 16 = 402.7 M wavefronts over the 16 SMs the blocks occupy, one
    # a cycle: 17.5 ms at 1.44 GHz, where its 1.1 G integer ops take 88 us and its 0.5 MB of
    # DRAM less
    wavefronts = 128 * 4096 * 48 * 16.0
    t = launch_time({"int": 1.1e9}, 5e5, 4096.0, rtx, dependent_cycles=CYCLES,
                    threads_per_sm=PER_SM, blocks=16, wavefronts=wavefronts)  # fmt: skip
    assert t.limit == "throughput"
    assert t.seconds == pytest.approx(wavefronts / 16 / 1.44e9)
    assert 0.017 < t.seconds < 0.018


def test_every_warp_takes_its_sm_cycles_to_start_and_retire(rtx) -> None:  # type: ignore[no-untyped-def]
    # 1.728 G threads that (almost all) exit at once, 2 integer ops each: 54 M warps at 11
    # cycles each over 68 SMs at 1.44 GHz = 6.07 ms, where their 3.5 G integer ops take
    # 0.28 ms; without the warps' cost the launch is as short as its work
    threads = 1.728e9
    t = launch_time({"int": 2 * threads}, 0.0, threads, rtx, dependent_cycles=CYCLES,
                    threads_per_sm=PER_SM, warp_cycles=11.0)  # fmt: skip
    assert t.limit == "throughput"
    assert t.seconds == pytest.approx(threads / 32 * 11 / (68 * 1.44e9))
    assert 0.006 < t.seconds < 0.0061
    assert _time(rtx, {"int": 2 * threads}, 0.0, threads).seconds < 0.001


def test_few_blocks_have_the_peak_of_the_sms_they_occupy(rtx) -> None:  # type: ignore[no-untyped-def]
    # 8 blocks of 256 threads, 3.9168e9 FP64 FLOP: the FP64 roof of all 68 SMs takes 10 ms,
    # of the 8 SMs the blocks run on 10 ms x 68 / 8 = 85 ms (the latency, 956 k FMAs a thread
    # of 48 cycles, 31.9 ms, is shorter); 68 blocks or more have the whole GPU
    fp64 = {"fp64": 3.9168e9}
    t = launch_time(fp64, 0.0, 2048.0, rtx, dependent_cycles=CYCLES, threads_per_sm=PER_SM,
                    blocks=8)  # fmt: skip
    assert t.limit == "throughput" and t.seconds == pytest.approx(0.01 * 68 / 8)
    t = launch_time(fp64, 0.0, 68 * 256.0, rtx, dependent_cycles=CYCLES, threads_per_sm=PER_SM,
                    blocks=68)  # fmt: skip
    assert t.seconds == pytest.approx(0.01)


def test_updates_of_one_address_take_their_turn(rtx) -> None:  # type: ignore[no-untyped-def]
    # 2^20 threads adding to one float sum, 3.2 cycles an update at 1.44 GHz: 2.33 ms, where
    # their 4 MB of DRAM take 5.5 us
    t = launch_time({"int": 2.0**21}, 4.2e6, 2.0**20, rtx, dependent_cycles=CYCLES,
                    threads_per_sm=PER_SM, contended=2.0**20, atomic_cycles=3.2)  # fmt: skip
    assert t.limit == "contention"
    assert t.seconds == pytest.approx(2**20 * 3.2 / 1.44e9)


def test_no_launch_is_shorter_than_its_dispatch(rtx) -> None:  # type: ignore[no-untyped-def]
    # 256 threads of 10 integer ops and 1 kB: 10 x 32.5 cycles / 1.44 GHz = 0.23 us of
    # latency, under the 2 us a launch takes to dispatch and drain its blocks
    t = launch_time({"int": 2560.0}, 1024.0, 256.0, rtx, dependent_cycles=CYCLES,
                    threads_per_sm=PER_SM, launch_seconds=2e-6)  # fmt: skip
    assert t.limit == "launch" and t.seconds == 2e-6
    # ... and does not shorten a longer one (10 ms of DRAM traffic)
    t = launch_time({"int": 2560.0}, 7.603e9, 256.0, rtx, dependent_cycles=CYCLES,
                    threads_per_sm=PER_SM, launch_seconds=2e-6)  # fmt: skip
    assert t.limit == "throughput" and t.seconds == pytest.approx(0.01)


def _atomic(index: str, distinct: float, **kw) -> Access:  # type: ignore[no-untyped-def]
    return Access("s", "global", 4, "atomic", 1.0, distinct, 3, index, **kw)


def test_contended_updates_per_address() -> None:
    threads = 1e6
    # ``atomicAdd(&s[0], x)`` and ``atomicMax(&s[0], x)``: 2 M updates of one address
    # (integers a warp combines: 2 M / 32); a histogram's 256 bins get 1 M / 256 each
    assert contended_updates([_atomic("0", 1.0), _atomic("0", 1.0)], threads) == 2e6
    combined = _atomic("0", 1.0, combined=True)
    assert contended_updates([combined], threads) == pytest.approx(1e6 / 32)
    assert contended_updates([_atomic("bin", 256.0)], threads) == pytest.approx(1e6 / 256)
    # updates under a branch on loaded data (``if (v != expected) atomicAdd(&errors, 1)``)
    # rest on a guessed share: not charged; an unknown index, a store, shared memory: none
    assert contended_updates([_atomic("0", 1.0, guessed=1.0)], threads) == 0.0
    assert contended_updates([_atomic("k", None)], threads) == 0.0  # type: ignore[arg-type]
    store = Access("s", "global", 4, "store", 1.0, 1.0, 3, "0")
    shared = Access("s", "shared", 4, "atomic", 1.0, 1.0, 3, "0")
    assert contended_updates([store, shared], threads) == 0.0


@pytest.mark.parametrize(
    ("seconds", "frames"),
    [(0.0045, 0), (0.0053, 0), (0.0054, 1), (0.0167, 1), (0.0219, 1), (0.0221, 2), (1.0, 60)],
)
def test_the_display_reads_a_frame_per_refresh(rtx, seconds: float, frames: int) -> None:  # type: ignore[no-untyped-def]
    # 60 Hz: a frame every 16.67 ms, the first once the launch runs 0.32 of one (5.33 ms):
    # 5.3 ms is 0.318 of a refresh (none), 5.4 ms 0.324 (one); the second at 16.67 + 5.33 =
    # 22 ms; a second is 60 refreshes, the last begun 0.68 of one before it ends: 60 frames
    assert display_bytes(rtx, seconds) == pytest.approx(20e6 * frames)


def test_no_display_no_traffic(rtx) -> None:  # type: ignore[no-untyped-def]
    assert display_bytes(load_registry().get("h100"), 1.0) == 0.0
    # a launch whose counts ran away (an unbounded loop) has no frame count to give
    assert display_bytes(rtx, float("inf")) == 0.0


def test_loop_control_beside_the_chain_takes_no_latency(rtx) -> None:  # type: ignore[no-untyped-def]
    # 256 threads of 10^6 integer ops, 4 x 10^5 of them each the loop control of a loop the
    # release build left rolled: the chain is the other 6 x 10^5 at 32.5 cycles, 13.5 ms;
    # the INT roof still takes all of them (20.4 us, far from the limit)
    totals = {"int": 256e6}
    t = launch_time(
        totals, 1024.0, 256.0, rtx, dependent_cycles=CYCLES, threads_per_sm=PER_SM,
        unchained_ints=256 * 4e5,
    )  # fmt: skip
    assert t.limit == "latency"
    assert t.seconds == pytest.approx(6e5 * 32.5 / 1.44e9)


def test_a_long_chain_overlaps_and_a_short_one_waits_longer(rtx) -> None:  # type: ignore[no-untyped-def]
    # the chain of test_a_few_threads_run_at_their_latency, 3.25 x 10^7 cycles, as its 0.9th
    # power about 10^5 cycles: 10^5 x 325^0.9 = 1.834 x 10^7 cycles, 12.7 ms (22.6 ms counted)
    def chained(int_ops: float) -> float:
        return launch_time(
            {"int": 256 * int_ops}, 1024.0, 256.0, rtx, dependent_cycles=CYCLES,
            threads_per_sm=PER_SM, chain_exponent=0.9, chain_pivot=1e5,
        ).seconds  # fmt: skip

    assert chained(1e6) == pytest.approx(1e5 * 325**0.9 / 1.44e9)
    assert chained(1e6) < 1e6 * 32.5 / 1.44e9
    # 100 ops a thread, 3250 cycles counted: 10^5 x 0.0325^0.9 = 4578 cycles, longer
    assert chained(100.0) == pytest.approx(1e5 * 0.0325**0.9 / 1.44e9)
    assert chained(100.0) > 100 * 32.5 / 1.44e9
    # at the pivot, as counted
    assert chained(1e5 / 32.5) == pytest.approx(1e5 / 1.44e9)
