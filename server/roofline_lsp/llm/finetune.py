"""Labelled examples: the small bundled few-shot set, few-shot retrieval from a labelled
dataset folder, and ``export-finetune`` (chat fine-tuning JSONL).

A dataset folder is laid out like ``shared/eval/dev``: ``kernels.jsonl`` (one row per kernel
with ``file``, ``line``, ``kernel``, ``language``, ``label`` and optionally ``measured``,
``bound_by``, ``block``, ``grid``, ``exe_args``) and ``sources/<file>``.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from roofline_lsp.detect.kernels import Detection, Kernel, detect
from roofline_lsp.evaluation.scoring import DatasetError, Row, load_rows
from roofline_lsp.llm.backend import (
    build_prompt,
    kernel_lines,
    normalise_kernel_source,
    prompt_text,
)

if TYPE_CHECKING:
    from roofline_lsp.model.gpus import GpuProfile

__all__ = [
    "DatasetError",
    "Example",
    "ExampleIndex",
    "ExportStats",
    "bundled_examples",
    "export_finetune",
    "load_example_index",
]

_MEASURED = (("sp_ai", "fp32"), ("dp_ai", "fp64"), ("int_ai", "int"))
_PRECISION_KEY = {"fp32": "sp_ai", "fp64": "dp_ai", "int": "int_ai"}
_TOKEN = re.compile(
    r"[A-Za-z_][A-Za-z_0-9]*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?[fFlLuU]*|[^\sA-Za-z_0-9]"
)


@dataclass(frozen=True)
class Example:
    """A labelled kernel shown to the model in few-shot mode."""

    name: str
    language: str
    source: str
    label: str  # "compute" | "bandwidth"
    reason: str
    gpu: str = ""  # the GPU the label was decided on ("" = holds on current GPUs)
    file: str = ""  # absolute path of the file it came from (dataset examples)
    line: int = 0
    id: str = ""


@cache
def bundled_examples() -> tuple[Example, ...]:
    """The hand-written examples shipped in ``prompts/examples.jsonl``."""
    out = []
    for line in prompt_text("examples.jsonl").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        out.append(
            Example(
                name=d["name"],
                language=d["language"],
                source=d["source"],
                label=d["label"],
                reason=d["reason"],
                gpu=d.get("gpu", ""),
                id=f"bundled/{d['name']}",
            )
        )
    return tuple(out)


def _tokens(text: str) -> Counter[str]:
    return Counter(_TOKEN.findall(normalise_kernel_source(text)))


def _vector(counts: Counter[str]) -> dict[str, float]:
    vec = {t: 1.0 + math.log(c) for t, c in counts.items()}
    norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {t: v / norm for t, v in vec.items()}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(t, 0.0) for t, v in a.items())


@dataclass
class ExampleIndex:
    """Labelled kernels of a dataset with a bag-of-tokens vector each (log-scaled term counts,
    cosine similarity): cheap, no model needed."""

    examples: list[Example]
    vectors: list[dict[str, float]]
    normalised: list[str]
    identity: str  # what the index was built from (for cache keys)
    skipped: int = 0
    _by_path: dict[str, str] = field(default_factory=dict, repr=False)

    def nearest(self, text: str, k: int, *, file: str = "", line: int = 0) -> list[Example]:
        """The ``k`` examples most similar to ``text``, never the kernel itself: not the
        same file and line, and not the same normalised text."""
        if k <= 0 or not self.examples:
            return []
        norm = normalise_kernel_source(text)
        query = _vector(Counter(_TOKEN.findall(norm)))
        real = os.path.realpath(file) if file else ""
        scored = []
        for i, ex in enumerate(self.examples):
            if real and ex.file == real and ex.line == line:
                continue
            if self.normalised[i] == norm:
                continue
            scored.append((-_cosine(query, self.vectors[i]), ex.id, i))
        scored.sort()
        return [self.examples[i] for _, _, i in scored[:k]]


def _reason(row: dict[str, Any]) -> str:
    m = row.get("measured") or {}
    bits = []
    for key, prec in _MEASURED:
        v = m.get(key)
        if isinstance(v, int | float):
            bits.append(f"{prec} AI {v:.3g}")
    reason = "Measured: " + ", ".join(bits) + " ops/byte" if bits else "Measured label"
    by = row.get("bound_by") or []
    if by:
        reason += f"; reaches the ridge point in {', '.join(map(str, by))}"
    elif bits:
        reason += "; below every ridge point"
    return reason + "."


def _detected(rows: Sequence[Row], dataset: str) -> Iterable[tuple[Row, Kernel, Detection]]:
    """Each row with its detected kernel (rows whose source is missing or whose kernel is
    not found get ``row.error`` set and are not yielded)."""
    by_file: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_file[str(r.data["file"])].append(r)
    for rel, file_rows in by_file.items():
        path = os.path.join(dataset, "sources", rel)
        try:
            with open(path, "rb") as f:
                source = f.read()
        except OSError:
            for r in file_rows:
                r.error = "missing"
            continue
        try:
            det = detect(source, path)
        except Exception:
            for r in file_rows:
                r.error = "not detected"
            continue
        for r in file_rows:
            k = next((k for k in det.kernels if k.line == r.data.get("line")), None)
            if k is None:
                r.error = "not detected"
                continue
            yield r, k, det


def load_example_index(dataset: str) -> ExampleIndex:
    """Index the labelled kernels of a dataset folder for few-shot retrieval."""
    rows = load_rows(dataset)
    examples: list[Example] = []
    vectors: list[dict[str, float]] = []
    normalised: list[str] = []
    skipped = 0
    for r, k, det in _detected(rows, dataset):
        label = r.data.get("label")
        if label not in ("compute", "bandwidth"):
            skipped += 1
            continue
        _, lines = kernel_lines(k, det)
        text = "\n".join(lines)
        norm = normalise_kernel_source(text)
        examples.append(
            Example(
                name=str(r.data.get("kernel") or k.name),
                language=str(r.data.get("language") or k.language),
                source=text,
                label=label,
                reason=_reason(r.data),
                gpu=str(r.data.get("gpu") or "dataset's GPU"),
                file=os.path.realpath(det.file),
                line=k.line,
                id=str(r.data.get("id") or f"{r.data['file']}:{k.line}"),
            )
        )
        vectors.append(_vector(Counter(_TOKEN.findall(norm))))
        normalised.append(norm)
    skipped += sum(1 for r in rows if r.error)
    st = os.stat(os.path.join(dataset, "kernels.jsonl"))
    identity = f"{os.path.realpath(dataset)}:{st.st_size}:{st.st_mtime_ns}"
    return ExampleIndex(examples, vectors, normalised, identity, skipped)


# --------------------------------------------------------------------------------------------
# export-finetune
# --------------------------------------------------------------------------------------------


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
    for r, k, det in _detected(rows, dataset_dir):
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
            "rationale": _reason(r.data),
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
