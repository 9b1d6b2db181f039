"""``roofline-lsp eval`` (``cli/evaluate.py``) on tiny labelled folders, in-process."""

from __future__ import annotations

import json

from cli_helpers import EXAMPLES, run

from roofline_lsp.cli.arguments import EXIT_OK, EXIT_USAGE


def test_eval_detection_only_on_a_tiny_dataset(tmp_path):
    (tmp_path / "sources" / "p").mkdir(parents=True)
    (tmp_path / "sources" / "p" / "a.cu").write_bytes((EXAMPLES / "saxpy.cu").read_bytes())
    rows = [
        {"id": "p/saxpy", "language": "cuda", "file": "p/a.cu", "line": 4, "label": "bandwidth"},
        {"id": "p/ghost", "language": "cuda", "file": "p/a.cu", "line": 1, "label": "compute"},
    ]
    (tmp_path / "kernels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out_json = tmp_path / "r.json"
    code, out, _ = run(
        "eval", "--dataset", str(tmp_path), "--detection-only", "--json", str(out_json)
    )
    assert code == EXIT_OK
    res = json.loads(out_json.read_text())
    assert res["kernels"] == 2 and res["detected"] == 1 and res["detection_recall"] == 0.5
    assert res["by_language"]["cuda"]["detected"] == 1
    assert res["predictions"][0] == {
        "id": "p/saxpy",
        "found": True,
        "label": "bandwidth",
        "predicted": None,
    }
    assert "seconds" in res
    code, out, _ = run("eval", "--dataset", str(tmp_path))
    res = json.loads(out)
    # the missing kernel counts as wrong: compute recall 0
    assert res["confusion"]["compute"] == {"None": 1}
    assert res["balanced_accuracy"] <= 0.5


def test_eval_missing_dataset(tmp_path):
    code, _, err = run("eval", "--dataset", str(tmp_path))
    assert code == EXIT_USAGE and "kernels.jsonl" in err


def test_eval_json_has_attribution_and_confidence_bands(tmp_path):
    (tmp_path / "sources" / "p").mkdir(parents=True)
    (tmp_path / "sources" / "p" / "a.cu").write_bytes((EXAMPLES / "saxpy.cu").read_bytes())
    threads = 256 * 65536
    row = {
        "id": "p/saxpy", "language": "cuda", "file": "p/a.cu", "line": 4, "label": "bandwidth",
        "block": [256, 1, 1], "grid": [65536, 1, 1],
        "measured": {"sp_flop": 2.0 * threads, "dp_flop": 0.0, "int_ops": 6.0 * threads,
                     "traffic_bytes": 12.0 * threads},
    }  # fmt: skip
    (tmp_path / "kernels.jsonl").write_text(json.dumps(row) + "\n")
    out_json = tmp_path / "r.json"
    code, out, _ = run(
        "eval", "--dataset", str(tmp_path), "--counts", "source", "--json", str(out_json)
    )
    assert code == EXIT_OK
    printed = json.loads(out)
    assert "predictions" not in printed
    assert printed["bandwidth_called_compute"] == 0.0
    for block in (printed, printed["by_language"]["cuda"]):
        assert block["attribution"]["fp32"]["within_2x"] == 1.0
        assert block["attribution"]["threads"]["median_abs_log10"] == 0.0
        assert block["confidence_bands"]["high"]["kernels"] == 1
    pred = json.loads(out_json.read_text())["predictions"][0]
    assert pred["confidence"] >= 0.8 and pred["counts_from"] == "source"
    # the launch and every count came from the source and the row: nothing assumed
    assert pred["assumed"] == [] and printed["dataset"] == tmp_path.name
    assert pred["attribution"]["fp32"]["log10_ratio"] == 0.0
    assert pred["attribution"]["threads"]["measured"] == threads
