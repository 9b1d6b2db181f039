"""Error attribution (``evaluation/attribution.py``): a verdict's launch totals beside the
measured ones, and the summary of |log10(estimate/measured)| per component."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from roofline_lsp.engine.dataset_run import run_dataset
from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.evaluation.attribution import (
    COMPONENTS,
    Pair,
    assumed,
    assumption_kinds,
    assumption_split,
    attribution_summary,
    component_summary,
    dram_miss,
    dram_misses,
    estimated_totals,
    measured_totals,
    row_attribution,
    row_pairs,
    unreused_bytes,
)
from roofline_lsp.model.config import Config
from roofline_lsp.model.verdict import Counts, Verdict

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def verdict(counts: Counts | None, ai: dict[str, float | None]) -> Verdict:
    return Verdict(
        kernel="k",
        gpu="RTX-3080",
        bound="bandwidth",
        source="static",
        confidence=0.9,
        ai=ai,
        ridge={"fp32": 33.0, "fp64": 0.5, "int": 16.5},
        deciding="int",
        counts=counts,
    )


def test_totals_are_the_ones_the_intensities_rest_on() -> None:
    # 100 iterations of 2 FP32 FLOP, 3 int ops, 8 B loaded and 4 B stored: 1200 B of DRAM.
    # The int AI also holds the OpenMP runtime's 500 instructions of the GPU threads, which the
    # per-iteration counts do not: (300 + 500) / 1200.
    c = Counts({"fp32": 2.0, "fp64": 0.0}, 3.0, 8.0, 4.0, per="iteration", threads=100.0)
    got = estimated_totals(verdict(c, {"fp32": 200 / 1200, "fp64": 0.0, "int": 800 / 1200}))
    assert got is not None
    assert got["fp32"] == pytest.approx(200) and got["fp64"] == 0
    assert got["int"] == pytest.approx(800)
    assert got["dram_bytes"] == 1200 and got["threads"] == 100
    # an intensity that is not there (or capped): counts x threads
    got = estimated_totals(verdict(c, {"fp32": None, "fp64": None, "int": 1e9}))
    assert got is not None and got["fp32"] == 200 and got["int"] == 300
    # an LLM or measured verdict has no counts: no estimate
    assert estimated_totals(verdict(None, {})) is None
    assert estimated_totals(None) is None


def test_measured_totals_from_a_dataset_row() -> None:
    row = {
        "grid": [4, 2, 1],
        "block": [128, 1, 1],
        "measured": {
            "sp_flop": 10.0,
            "dp_flop": 0.0,
            "int_ops": 7,
            "traffic_bytes": 64.0,
            "time_ns": 2500,
        },
    }
    assert measured_totals(row) == {
        "fp32": 10.0,
        "fp64": 0.0,
        "int": 7.0,
        "dram_bytes": 64.0,
        "threads": 4 * 2 * 128.0,
        "seconds": pytest.approx(2.5e-6),
    }
    bad = {"grid": [4, 0, 1], "block": "x", "measured": {"sp_flop": "1", "int_ops": True}}
    assert set(measured_totals(bad).values()) == {None}
    assert set(measured_totals({}).values()) == {None}


def test_summary_counts_zeros_and_missing_values_as_documented() -> None:
    pairs = [
        Pair(100.0, 100.0),  # exact
        Pair(150.0, 100.0),  # 1.5x
        Pair(50.0, 100.0),  # 2x under: within 2x, boundary included
        Pair(300.0, 100.0),  # 3x: within 10x only
        Pair(0.0, 100.0),  # estimated nothing of measured work: an infinite error
        Pair(None, 100.0),  # no estimate (kernel not found): an infinite error
        Pair(5.0, 0.0),  # measured 0: not scored, work invented
        Pair(0.0, 0.0),  # measured 0, estimated 0: not scored
        Pair(5.0, None),  # not measured
    ]
    s = component_summary(pairs)
    # errors sorted: 0, log10 1.5, log10 2, log10 3, inf, inf -> median between log10 2 and 3
    assert s["scored"] == 6
    assert s["median_abs_log10"] == round((math.log10(2) + math.log10(3)) / 2, 4)
    assert s["within_2x"] == round(3 / 6, 4) and s["within_10x"] == round(4 / 6, 4)
    assert (s["no_estimate"], s["estimated_zero"]) == (1, 1)
    assert (s["measured_zero"], s["invented"], s["unmeasured"]) == (2, 1, 1)
    # when most scored rows have no estimate, the median is infinite: reported as null
    s = component_summary([Pair(None, 1.0), Pair(0.0, 1.0), Pair(1.0, 1.0)])
    assert s["median_abs_log10"] is None and s["within_2x"] == round(1 / 3, 4)
    assert component_summary([])["within_2x"] is None


def test_pair_ratio_and_json() -> None:
    assert Pair(200.0, 100.0).log10_ratio == pytest.approx(math.log10(2))
    assert Pair(0.0, 100.0).log10_ratio is None and Pair(1.0, None).log10_ratio is None
    assert Pair(3.0, 1.0).as_json() == {
        "estimated": 3.0,
        "measured": 1.0,
        "log10_ratio": round(math.log10(3), 4),
    }


def test_saxpy_row_against_hand_derived_totals(tmp_path: Path) -> None:
    (tmp_path / "sources" / "p").mkdir(parents=True)
    (tmp_path / "sources" / "p" / "a.cu").write_bytes((EXAMPLES / "saxpy.cu").read_bytes())
    threads = 256 * 65536  # n = 1 << 24, one element per thread
    row = {
        "id": "p/saxpy", "file": "p/a.cu", "line": 4, "label": "bandwidth", "language": "cuda",
        "block": [256, 1, 1], "grid": [65536, 1, 1],
        # as ncu would count it: one FFMA (2 FLOP) per thread; 12 B per thread (x and y read,
        # y written); the measured bytes here are 3x that, the integer ops are not measured;
        # 300 us measured
        "measured": {"sp_flop": 2.0 * threads, "dp_flop": 0.0, "traffic_bytes": 36.0 * threads,
                     "time_ns": 300000},
    }  # fmt: skip
    (tmp_path / "kernels.jsonl").write_text(json.dumps(row) + "\n")
    result, _ = run_dataset(Workspace(Config(gpu="rtx3080", counts="source")), str(tmp_path))
    pairs = row_pairs(result.rows[0])
    assert pairs["fp32"].estimated == pytest.approx(2.0 * threads)  # an FMA is 2 FLOP
    assert pairs["fp32"].log10_ratio == pytest.approx(0.0)
    assert pairs["fp64"] == Pair(0.0, 0.0)
    est = pairs["dram_bytes"].estimated
    assert est is not None and 12.0 * threads <= est <= 12.5 * threads
    assert pairs["threads"] == Pair(float(threads), float(threads))
    assert pairs["int"].measured is None
    # the launch moves its DRAM bytes at 72% of the RTX 3080's 760.3 GB/s (the bandwidth a
    # launch sustains, ``Calibration.dram_efficiency``): 12 B x 16.8 M threads (201 MB) take
    # 368 us, within 2x of the 300 us measured
    assert pairs["seconds"].measured == pytest.approx(3e-4)
    t = pairs["seconds"].estimated
    rate = 760.3e9 * 0.72
    assert t is not None and 12.0 * threads / rate <= t <= 12.5 * threads / rate
    s = attribution_summary(result.rows)
    assert set(s) == set(COMPONENTS)
    assert s["fp32"]["within_2x"] == 1.0 and s["fp64"]["measured_zero"] == 1
    assert s["dram_bytes"]["within_2x"] == 0.0 and s["dram_bytes"]["within_10x"] == 1.0
    assert s["int"]["unmeasured"] == 1 and s["int"]["scored"] == 0


ROWS_KERNEL = """\
#include <cstdlib>
__global__ void scale_rows(float *x, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < m; j++) x[i * m + j] = 2.0f * x[i * m + j];
}

int main(int argc, char **argv)
{
    int m = atoi(argv[1]);
    float *x;
    cudaMalloc(&x, 65536 * m * sizeof(float));
    scale_rows<<<256, 256>>>(x, m);
    return 0;
}
"""


def test_split_by_what_the_verdict_assumed(tmp_path: Path) -> None:
    # saxpy's launch and work all come from its source: nothing assumed, 2 FLOP a thread as
    # measured. scale_rows' row length m is a program argument the row does not give: the
    # estimator assumes 16 trips of 1 FLOP, where the program ran m = 64 (64 FLOP a thread,
    # 4x the estimate: outside 2x).
    (tmp_path / "sources" / "p").mkdir(parents=True)
    (tmp_path / "sources" / "p" / "a.cu").write_bytes((EXAMPLES / "saxpy.cu").read_bytes())
    (tmp_path / "sources" / "p" / "b.cu").write_text(ROWS_KERNEL)
    saxpy_threads, rows_threads = 256 * 65536, 256 * 256
    rows = [
        {"id": "p/saxpy", "file": "p/a.cu", "line": 4, "label": "bandwidth", "language": "cuda",
         "block": [256, 1, 1], "grid": [65536, 1, 1],
         "measured": {"sp_flop": 2.0 * saxpy_threads}},
        {"id": "p/scale_rows", "file": "p/b.cu", "line": 2, "label": "bandwidth",
         "language": "cuda", "block": [256, 1, 1], "grid": [256, 1, 1],
         "measured": {"sp_flop": 64.0 * rows_threads}},
    ]  # fmt: skip
    (tmp_path / "kernels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result, _ = run_dataset(Workspace(Config(gpu="rtx3080", counts="source")), str(tmp_path))
    saxpy, scale = result.rows
    assert saxpy.verdict is not None and not assumed(saxpy.verdict)
    assert scale.verdict is not None and assumed(scale.verdict)
    assert row_pairs(scale)["fp32"].estimated == pytest.approx(16.0 * rows_threads)
    split = assumption_split(result.rows)
    assert split["nothing_assumed"]["fp32"]["scored"] == 1
    assert split["nothing_assumed"]["fp32"]["within_2x"] == 1.0
    assert split["assumed"]["fp32"]["scored"] == 1
    assert split["assumed"]["fp32"]["within_2x"] == 0.0
    assert split["assumed"]["fp32"]["median_abs_log10"] == round(math.log10(4), 4)
    # the whole set holds both
    assert attribution_summary(result.rows)["fp32"]["within_2x"] == 0.5


def test_the_assumed_rows_split_by_what_was_assumed(tmp_path: Path) -> None:
    # scale_rows twice: m from the command line (run without arguments: a value the source
    # could give, "unknown values"), and m read from the input file ("input": no source
    # gives it). Both assume 16 trips of 1 FLOP; the first ran m = 64 (4x off), the second
    # m = 20 (within 2x). Each row is in the kind its verdict names, and only there.
    read = ROWS_KERNEL.replace(
        "int m = atoi(argv[1]);", 'int m; FILE *f = fopen(argv[1], "r"); fscanf(f, "%d", &m);'
    )
    (tmp_path / "sources" / "p").mkdir(parents=True)
    (tmp_path / "sources" / "p" / "b.cu").write_text(ROWS_KERNEL)
    (tmp_path / "sources" / "p" / "c.cu").write_text("#include <cstdio>\n" + read)
    threads = 256 * 256
    rows = [
        {"id": "p/argv", "file": "p/b.cu", "line": 2, "label": "bandwidth", "language": "cuda",
         "block": [256, 1, 1], "grid": [256, 1, 1], "measured": {"sp_flop": 64.0 * threads}},
        {"id": "p/file", "file": "p/c.cu", "line": 3, "label": "bandwidth", "language": "cuda",
         "block": [256, 1, 1], "grid": [256, 1, 1], "measured": {"sp_flop": 20.0 * threads}},
    ]  # fmt: skip
    (tmp_path / "kernels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result, _ = run_dataset(Workspace(Config(gpu="rtx3080", counts="source")), str(tmp_path))
    kinds = assumption_kinds(result.rows)
    assert sorted(kinds) == ["input", "unknown values"]
    assert (kinds["input"]["fp32"]["scored"], kinds["input"]["fp32"]["within_2x"]) == (1, 1.0)
    assert (
        kinds["unknown values"]["fp32"]["scored"],
        kinds["unknown values"]["fp32"]["within_2x"],
    ) == (1, 0.0)


TABLE_KERNEL = """\
__global__ void table_sum(const float *t, float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int j = 0; j < 64; j++) s += t[j];
    out[i] = s;
}

int main()
{
    float *t, *out;
    cudaMalloc(&t, 64 * sizeof(float));
    cudaMalloc(&out, 65536 * sizeof(float));
    table_sum<<<256, 256>>>(t, out);
    return 0;
}
"""


def test_dram_misses_say_whether_the_reuse_model_removed_the_bytes(tmp_path: Path) -> None:
    # 65536 threads each read the 64 floats of one table and write one float: they reference
    # 65536 x (64 + 1) x 4 B = 17.04 MB, of which the model keeps a few hundred kB (the 256 B
    # table once, the 256 kB written, the launch's own). Measured at 17 MB, the model removed
    # bytes the hardware moved; at 1.7 GB even every referenced byte falls short (traffic the
    # model does not see); at the estimate itself it is within 2x; at a tenth of it, over.
    (tmp_path / "sources" / "p").mkdir(parents=True)
    (tmp_path / "sources" / "p" / "t.cu").write_text(TABLE_KERNEL)
    referenced = 65536 * 65 * 4.0
    base = {"file": "p/t.cu", "line": 1, "label": "bandwidth", "language": "cuda",
            "block": [256, 1, 1], "grid": [256, 1, 1]}  # fmt: skip
    rows = [{**base, "id": "p/once"}]  # the estimate, to set the other rows' measurements
    (tmp_path / "kernels.jsonl").write_text(json.dumps(rows[0]) + "\n")
    result, _ = run_dataset(Workspace(Config(gpu="rtx3080", counts="source")), str(tmp_path))
    assert unreused_bytes(result.rows[0].verdict) == pytest.approx(referenced)
    est = row_pairs(result.rows[0])["dram_bytes"].estimated
    assert est is not None and est < referenced / 20
    measured = {"reuse": 17e6, "unseen": 1.7e9, "within": est * 1.5, "over": est / 10}
    rows = [{**base, "id": f"p/{k}", "measured": {"traffic_bytes": v}} for k, v in measured.items()]
    rows.append({**base, "id": "p/unmeasured"})
    (tmp_path / "kernels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result, _ = run_dataset(Workspace(Config(gpu="rtx3080", counts="source")), str(tmp_path))
    assert [dram_miss(r) for r in result.rows] == [
        "under_reuse_removed",
        "under_unseen",
        "within_2x",
        "over",
        None,
    ]
    assert dram_misses(result.rows) == {
        "within_2x": 1,
        "over": 1,
        "under_reuse_removed": 1,
        "under_unseen": 1,
    }
    assert row_attribution(result.rows[0])["dram_bytes"]["unreused"] == pytest.approx(referenced)
    # a verdict without counts (an LLM's) has no memory estimate
    assert unreused_bytes(verdict(None, {})) is None and unreused_bytes(None) is None
