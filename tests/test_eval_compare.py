"""``scripts/eval_compare.py``: two ``eval --json`` runs side by side, what moved between them,
and the rows that moved only for a dataset that is not val (the accuracy protocol)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).parents[1] / "scripts" / "eval_compare.py"
COMPONENTS = ("fp32", "fp64", "int", "dram_bytes", "threads", "seconds")


def run_json(path: Path, dataset: str | None, int_ratios: list[float], predicted: list[str]) -> str:
    """A run of two rows, both labelled bandwidth-bound, with these int log10 ratios and
    verdicts (the summary figures are made up: the script prints them as they are)."""

    def comp(r: float | None) -> dict[str, Any]:
        return {"estimated": 1.0, "measured": 1.0, "log10_ratio": r}

    preds = [
        {
            "id": f"p/k{i}",
            "found": True,
            "label": "bandwidth",
            "predicted": predicted[i],
            "assumed": [] if i == 0 else ["while"],
            "attribution": {c: comp(r if c == "int" else None) for c in COMPONENTS},
        }
        for i, r in enumerate(int_ratios)
    ]
    within = {c: {"within_2x": 0.5} for c in COMPONENTS}
    data = {
        **({"dataset": dataset} if dataset else {}),
        "balanced_accuracy": 0.5,
        "bandwidth_called_compute": 0.5,
        "by_language": {"cuda": {"balanced_accuracy": 0.5}},
        "balanced_subset": {"balanced_accuracy": None},
        "attribution": within,
        "confidence_bands": {"high": {"accuracy": 1.0, "kernels": 1}},
        "predictions": preds,
    }
    path.write_text(json.dumps(data))
    return str(path)


def compare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


def test_what_moved_between_two_dev_runs(tmp_path: Path) -> None:
    # k0: int 2.5x under (-0.40) -> 1.26x under (-0.10), into 2x, verdict unchanged;
    # k1 (assumed a while loop's trips): +0.20 -> +0.50, out of 2x, and its verdict went
    # from bandwidth (right) to compute (wrong)
    before = run_json(tmp_path / "a.json", "dev", [-0.40, 0.20], ["bandwidth", "bandwidth"])
    after = run_json(tmp_path / "b.json", "dev", [-0.10, 0.50], ["bandwidth", "compute"])
    # the newer run also splits its DRAM misses (an older JSON has no such key)
    data = json.loads(Path(after).read_text())
    data["dram_misses"] = {"within_2x": 1, "over": 0, "under_reuse_removed": 1, "under_unseen": 0}
    Path(after).write_text(json.dumps(data))
    done = compare(before, after, "--rows")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("before: balanced 0.500 (CUDA 0.500, OpenMP -, subset -)")
    assert "within 2x FP32 / FP64 / int / DRAM 50.0 / 50.0 / 50.0 / 50.0" in out
    before_line, after_line = out.splitlines()[:2]
    assert "DRAM under" not in before_line
    assert after_line.endswith("top band 100% of 1; DRAM under 2x: reuse removed 1, unseen 0")
    assert "   1 int into 2x\n" in out
    assert "   1 int out of 2x (assumed)\n" in out
    assert "   1 verdict wrong (assumed)\n" in out
    assert "p/k0: int into 2x -0.40 -> -0.10" in out
    assert "p/k1: verdict wrong" in out


def test_rows_are_not_listed_for_val_or_an_unnamed_dataset(tmp_path: Path) -> None:
    for name, dataset in (("val", "val"), ("unnamed", None)):
        before = run_json(tmp_path / f"{name}1.json", dataset, [-0.4, 0.2], ["bandwidth"] * 2)
        after = run_json(tmp_path / f"{name}2.json", dataset, [-0.1, 0.5], ["bandwidth"] * 2)
        done = compare(before, after, "--rows")
        assert done.returncode == 2
        assert "   1 int into 2x\n" in done.stdout  # the aggregate figures still print
        assert "p/k0" not in done.stdout and "not val" in done.stdout


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    # ``eval_compare.py A B --rows | head -1``: the reader closes the pipe after one line
    # while thousands of moved rows are still to print
    n = 5000
    before = run_json(tmp_path / "a.json", "dev", [-0.40] * n, ["bandwidth"] * n)
    after = run_json(tmp_path / "b.json", "dev", [-0.10] * n, ["bandwidth"] * n)
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), before, after, "--rows"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("before:")
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert "Traceback" not in err, err
