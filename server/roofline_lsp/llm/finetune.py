"""``export-finetune``: a labelled dataset folder (laid out like ``shared/eval/dev``) as chat
fine-tuning JSONL, one zero-shot prompt and its labelled answer per kernel.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass

from roofline_lsp.evaluation.dataset import load_rows
from roofline_lsp.llm.examples import detected_rows, measured_reason
from roofline_lsp.llm.prompting import build_prompt
from roofline_lsp.model.gpus import GpuProfile

_PRECISION_KEY = {"fp32": "sp_ai", "fp64": "dp_ai", "int": "int_ai"}


@dataclass(frozen=True)
class ExportStats:
    out: str
    written: int
    missing_source: int
    not_detected: int
    unlabelled: int

    def __str__(self) -> str:
        skipped = []
        if self.missing_source:
            skipped.append(f"{self.missing_source} with no source file")
        if self.not_detected:
            skipped.append(f"{self.not_detected} whose kernel was not found")
        if self.unlabelled:
            skipped.append(f"{self.unlabelled} without a compute/bandwidth label")
        s = f"wrote {self.written} example(s) to {self.out}"
        return s + (f"; skipped {', '.join(skipped)}" if skipped else "")


def export_finetune(dataset_dir: str, out_path: str, gpu: GpuProfile) -> ExportStats:
    """Write chat fine-tuning JSONL (``{"messages": [system, user, assistant]}`` per kernel):
    the zero-shot prompt for ``gpu`` and the row's label as the assistant's JSON answer.

    Raises :class:`DatasetError` (a ``ValueError``) for an unusable dataset folder and
    ``OSError`` when ``out_path`` cannot be written.
    """
    rows = load_rows(dataset_dir)
    lines: list[str] = []
    unlabelled = 0
    for r, k, det in detected_rows(rows, dataset_dir):
        label = r.data.get("label")
        if label not in ("compute", "bandwidth"):
            unlabelled += 1
            continue
        ctx = build_prompt(k, det, gpu, mode="zero-shot", inputs=r.inputs())
        m = r.data.get("measured") or {}
        ai = m.get(_PRECISION_KEY.get(ctx.precision, ""))
        answer = {
            "bound": label,
            "confidence": 1.0,
            "arithmetic_intensity": float(ai) if isinstance(ai, int | float) else None,
            "rationale": measured_reason(r.data),
            "suggestions": [],
        }
        messages = [*ctx.messages, {"role": "assistant", "content": json.dumps(answer)}]
        lines.append(json.dumps({"messages": messages}, ensure_ascii=False))
    missing = sum(1 for r in rows if r.error == "missing")
    not_detected = sum(1 for r in rows if r.error == "not detected")
    directory = os.path.dirname(os.path.abspath(out_path))
    fd, tmp = tempfile.mkstemp(prefix=".finetune-", suffix=".jsonl", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        os.replace(tmp, out_path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return ExportStats(out_path, len(lines), missing, not_detected, unlabelled)
