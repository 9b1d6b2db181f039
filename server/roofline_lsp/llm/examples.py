"""Labelled examples for few-shot prompts: the small bundled set (``prompts/examples.jsonl``)
and retrieval of the nearest labelled kernels of a dataset folder.

A dataset folder is laid out like ``shared/eval/dev``: ``kernels.jsonl`` (one row per kernel
with ``file``, ``line``, ``kernel``, ``language``, ``label`` and optionally ``measured``,
``bound_by``, ``block``, ``grid``, ``exe_args``) and ``sources/<file>``.

Retrieval never shows a kernel its own benchmark: not the kernel itself, not another kernel of
its program, not a kernel of the program's CUDA/OpenMP sibling (HeCBench's ``<name>-cuda`` and
``<name>-omp`` port the same code), so few-shot figures on a dataset are not flattered by
near-copies of the answer.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from roofline_lsp.detect.kernels import detect
from roofline_lsp.evaluation.dataset import Row, load_rows, rows_by_file
from roofline_lsp.llm.kernel_source import kernel_lines, normalise_kernel_source
from roofline_lsp.llm.templates import prompt_text
from roofline_lsp.model.kernel import Detection, Kernel

_MEASURED = (("sp_ai", "fp32"), ("dp_ai", "fp64"), ("int_ai", "int"))
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
    benchmark: str = ""  # the program's name without its port suffix ("" = bundled)


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


# the port suffixes of HeCBench program folders: ``<name>-cuda`` and ``<name>-omp`` are the
# same benchmark (``-hip`` and ``-sycl`` ports exist upstream too)
_PORT = re.compile(r"-(?:cuda|omp|hip|sycl)$")


def benchmark_of(program: str) -> str:
    """The benchmark a program folder belongs to: its name without the port suffix."""
    return _PORT.sub("", program)


def program_of(path: str) -> str:
    """The program folder of a source file: the folder right under a ``sources`` folder (the
    dataset layout, ``sources/<program>/...``), else the folder holding the file."""
    parts = os.path.normpath(os.path.realpath(path)).split(os.sep)
    for i in range(len(parts) - 2, 0, -1):
        if parts[i - 1] == "sources":
            return parts[i]
    return parts[-2] if len(parts) >= 2 else ""


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
        """The ``k`` examples most similar to ``text``, never from the kernel's benchmark:
        not the same file and line, not the same normalised text, and no example whose
        benchmark is that of ``file``'s program (:func:`program_of`, :func:`benchmark_of`)."""
        if k <= 0 or not self.examples:
            return []
        norm = normalise_kernel_source(text)
        query = _vector(Counter(_TOKEN.findall(norm)))
        real = os.path.realpath(file) if file else ""
        own = benchmark_of(program_of(real)) if real else ""
        scored = []
        for i, ex in enumerate(self.examples):
            if real and ex.file == real and ex.line == line:
                continue
            if own and ex.benchmark == own:
                continue
            if self.normalised[i] == norm:
                continue
            scored.append((-_cosine(query, self.vectors[i]), ex.id, i))
        scored.sort()
        return [self.examples[i] for _, _, i in scored[:k]]


def measured_reason(row: dict[str, Any]) -> str:
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


def detected_rows(rows: Sequence[Row], dataset: str) -> Iterable[tuple[Row, Kernel, Detection]]:
    """Each row with its detected kernel (rows whose source is missing or whose kernel is
    not found get ``row.error`` set and are not yielded)."""
    for rel, file_rows in rows_by_file(rows).items():
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
    for r, k, det in detected_rows(rows, dataset):
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
                reason=measured_reason(r.data),
                gpu=str(r.data.get("gpu") or "dataset's GPU"),
                file=os.path.realpath(det.file),
                line=k.line,
                id=str(r.data.get("id") or f"{r.data['file']}:{k.line}"),
                benchmark=benchmark_of(
                    str(r.data.get("program") or str(r.data["file"]).split("/")[0])
                ),
            )
        )
        vectors.append(_vector(Counter(_TOKEN.findall(norm))))
        normalised.append(norm)
    skipped += sum(1 for r in rows if r.error)
    st = os.stat(os.path.join(dataset, "kernels.jsonl"))
    identity = f"{os.path.realpath(dataset)}:{st.st_size}:{st.st_mtime_ns}"
    return ExampleIndex(examples, vectors, normalised, identity, skipped)
