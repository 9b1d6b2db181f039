"""Scores of an ``eval`` run (``evaluation/scoring.py``): confusion, balanced accuracy, the
share of bandwidth-bound kernels called compute, and, in every block (all rows, per language,
the balanced subset), the confidence bands and the error attribution."""

from __future__ import annotations

from dataclasses import replace

from roofline_lsp.detect.kernels import detect
from roofline_lsp.evaluation.dataset import Row
from roofline_lsp.evaluation.scoring import EvalResult, spearman
from roofline_lsp.model.terms import AssumptionTerm
from roofline_lsp.model.verdict import Bound, Counts, Verdict

SOURCE = b"__global__ void k(float *x) { x[threadIdx.x] = 0.0f; }\n"


def row(
    rid: str, label: str, bound: Bound | None, language: str = "cuda", *, balanced: bool = False
) -> Row:
    det = detect(SOURCE, "k.cu")
    data = {
        "id": rid, "file": "k.cu", "line": 1, "label": label, "language": language,
        "balanced": balanced, "grid": [2, 1, 1], "block": [64, 1, 1],
        "measured": {"sp_flop": 256.0, "dp_flop": 0.0, "int_ops": 0.0, "traffic_bytes": 512.0},
    }  # fmt: skip
    r = Row(data, detection=det)
    if bound is not None:
        r.kernel = det.kernels[0]
        # 128 threads of 2 FP32 FLOP and 4 B each: 256 FLOP (as measured), 512 B (as measured)
        counts = Counts({"fp32": 2.0}, 0.0, 0.0, 4.0, threads=128.0)
        ai: dict[str, float | None] = {"fp32": 0.5, "int": 0.0}
        ridge = {"fp32": 33.0, "int": 16.5}
        r.verdict = Verdict("k", "RTX-3080", bound, "static", 0.7, ai, ridge, "fp32", counts=counts)
    return r


def test_summary_blocks_hold_bands_attribution_and_false_compute_share() -> None:
    rows = [
        row("a", "bandwidth", "bandwidth", balanced=True),
        row("b", "bandwidth", "compute", balanced=True),
        row("c", "bandwidth", "bandwidth", "omp"),
        row("d", "compute", "compute", "omp", balanced=True),
        row("e", "bandwidth", None, "omp"),  # not found
    ]
    s = EvalResult(rows, 1.0, False).summary()
    # 4 bandwidth-bound rows, 1 called compute; the one not found is wrong but not "compute"
    assert s["bandwidth_called_compute"] == 0.25
    assert s["balanced_accuracy"] == round((2 / 4 + 1) / 2, 4)
    assert s["by_language"]["cuda"]["bandwidth_called_compute"] == 0.5
    assert s["by_language"]["omp"]["bandwidth_called_compute"] == 0.0
    assert s["balanced_subset"]["kernels"] == 3
    assert s["confidence_bands"]["mid"]["kernels"] == 4
    assert s["confidence_bands"]["no_verdict"] == 1
    assert s["by_language"]["omp"]["confidence_bands"]["mid"]["correct"] == 2
    fp32 = s["attribution"]["fp32"]
    assert fp32["scored"] == 5 and fp32["within_2x"] == 0.8 and fp32["no_estimate"] == 1
    assert s["by_language"]["cuda"]["attribution"]["dram_bytes"]["within_2x"] == 1.0
    assert s["by_language"]["omp"]["attribution"]["threads"]["scored"] == 3
    first, missing = s["predictions"][0], s["predictions"][-1]
    assert first["confidence"] == 0.7
    assert first["attribution"]["fp32"] == {
        "estimated": 256.0,
        "measured": 256.0,
        "log10_ratio": 0.0,
    }
    assert "confidence" not in missing and missing["attribution"]["fp32"]["estimated"] is None


def test_a_prediction_names_the_kinds_of_value_its_verdict_assumed() -> None:
    r = row("a", "bandwidth", "bandwidth")
    assert r.verdict is not None
    terms = (
        AssumptionTerm("trips", 16.0, "while", line=3),
        AssumptionTerm("trips", 16.0, "data", line=5),
        AssumptionTerm("trips", 16.0, "while", line=7),
    )
    r.verdict = replace(r.verdict, terms=terms)
    plain = row("b", "bandwidth", "bandwidth")
    preds = EvalResult([r, plain, row("c", "bandwidth", None)], 1.0, False).summary()
    # each kind once, in the order the terms name them; [] for an estimate that assumed
    # nothing; no field for a kernel not found (no estimate to have assumed anything)
    assert [p.get("assumed") for p in preds["predictions"]] == [["while", "data"], [], None]


def test_detection_only_has_no_scores_beyond_recall() -> None:
    s = EvalResult([row("a", "bandwidth", "bandwidth")], 1.0, True).summary()
    assert "attribution" not in s and "confidence_bands" not in s
    assert set(s["predictions"][0]) == {"id", "found", "label", "predicted", "explanation"}


def test_spearman() -> None:
    assert spearman([1.0, 2.0, 3.0], [10.0, 20.0, 30.0]) == 1.0
    assert spearman([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == -1.0
    assert spearman([1.0, 2.0], [1.0, 2.0]) is None
