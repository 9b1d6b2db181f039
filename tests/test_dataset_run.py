"""``eval``'s run (``engine/dataset_run.py``): each row's kernel found by its line and given
the editor's verdict for the row's launch; unreadable files are the rows' errors."""

from __future__ import annotations

import json
from pathlib import Path

from roofline_lsp.engine.dataset_run import run_dataset
from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.model.config import Config

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def dataset(tmp_path: Path) -> Path:
    (tmp_path / "sources" / "p").mkdir(parents=True)
    (tmp_path / "sources" / "p" / "a.cu").write_bytes((EXAMPLES / "saxpy.cu").read_bytes())
    rows = [
        # saxpy with the launch of the row: 1 << 20 threads
        {"id": "p/saxpy", "file": "p/a.cu", "line": 4, "label": "bandwidth",
         "block": [256, 1, 1], "grid": [4096, 1, 1], "language": "cuda"},
        {"id": "p/gone", "file": "p/missing.cu", "line": 1, "label": "compute",
         "language": "cuda"},
    ]  # fmt: skip
    (tmp_path / "kernels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_rows_get_the_editors_verdict_for_their_launch(tmp_path: Path) -> None:
    ws = Workspace(Config(gpu="rtx3080", counts="source"))
    result, counts_from = run_dataset(ws, str(dataset(tmp_path)))
    saxpy, gone = result.rows
    assert saxpy.kernel is not None and saxpy.verdict is not None
    assert saxpy.verdict.gpu == "RTX-3080" and saxpy.verdict.bound == "bandwidth"
    assert saxpy.verdict.counts is not None and saxpy.verdict.counts.threads == 256 * 4096
    assert counts_from == {"p/saxpy": "source"}
    assert result.extra["counts"] == {"mode": "source", "ptx": 0, "source": 1}
    assert gone.kernel is None and gone.error is not None and "p/missing.cu" in gone.error


def test_detection_only_gives_no_verdicts(tmp_path: Path) -> None:
    ws = Workspace(Config(gpu="rtx3080", counts="source"))
    result, counts_from = run_dataset(ws, str(dataset(tmp_path)), detection_only=True)
    assert result.detection_only and counts_from == {}
    assert [r.kernel is not None for r in result.rows] == [True, False]
    assert all(r.verdict is None for r in result.rows)
