"""Labelled dataset folders (``kernels.jsonl`` + ``sources/``, laid out like
``../shared/eval/dev``): their rows, read and checked, for ``eval``, few-shot retrieval and
``export-finetune``.

A row's ``file``, ``line``, ``block``, ``grid`` and ``exe_args`` describe the kernel and its
launch, and the template arguments in its ``signature`` the instance profiled (``conv1d<double>``);
``label``, ``measured``, ``bound_by`` and ``paper_*`` are for scoring and examples.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from roofline_lsp.estimate.roofline import Inputs
from roofline_lsp.model.kernel import Detection, Kernel
from roofline_lsp.model.verdict import Verdict


class DatasetError(ValueError):
    """A dataset folder that cannot be used (what is wrong, with the path)."""


@dataclass
class Row:
    data: dict[str, Any]
    kernel: Kernel | None = None
    detection: Detection | None = None
    verdict: Verdict | None = None
    error: str | None = None

    @property
    def id(self) -> str:
        return str(self.data.get("id"))

    @property
    def label(self) -> str | None:
        return self.data.get("label")

    @property
    def language(self) -> str:
        return str(self.data.get("language", "cuda"))

    @property
    def predicted(self) -> str | None:
        if self.kernel is None or self.verdict is None:
            return None
        return self.verdict.bound

    def inputs(self) -> Inputs:
        def dim(v: Any) -> tuple[int, int, int] | None:
            if isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) for x in v):
                return (v[0], v[1], v[2])
            return None

        return Inputs(
            block=dim(self.data.get("block")),
            grid=dim(self.data.get("grid")),
            args=self.data.get("exe_args") or None,
            instantiation=instantiation(
                str(self.data.get("signature") or ""), str(self.data.get("kernel") or "")
            ),
        )


def instantiation(signature: str, name: str) -> tuple[str, ...]:
    """The template arguments of ``name`` in a demangled ``signature``:
    ``void conv1d<double>(double const*, ...)`` -> ``("double",)``; ``()`` for none."""
    short = name.rsplit("::", 1)[-1]
    m = re.search(r"(?<!\w)" + re.escape(short) + r"\s*<", signature) if short else None
    if m is None:
        return ()
    args: list[str] = []
    depth, start = 1, m.end()
    for i in range(m.end(), len(signature)):
        c = signature[i]
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
            if depth == 0:
                args.append(signature[start:i].strip())
                return tuple(a for a in args if a)
        elif c == "," and depth == 1:
            args.append(signature[start:i].strip())
            start = i + 1
    return ()


def load_rows(dataset: str) -> list[Row]:
    path = os.path.join(dataset, "kernels.jsonl")
    if not os.path.isfile(path):
        raise DatasetError(f"{dataset}: no kernels.jsonl (expected a folder like shared/eval/dev)")
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as e:
                raise DatasetError(f"{path}:{n}: invalid JSON ({e.msg})") from None
            if not isinstance(data, dict) or "file" not in data or "line" not in data:
                raise DatasetError(f"{path}:{n}: a row needs 'file' and 'line'")
            rows.append(Row(data))
    if not rows:
        raise DatasetError(f"{path}: no rows")
    sources = os.path.join(dataset, "sources")
    if not os.path.isdir(sources):
        raise DatasetError(
            f"{sources}: missing; get the sources first (see the dataset's README.md)"
        )
    return rows


def rows_by_file(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """Rows grouped by their source ``file`` (relative to ``sources/``), in first-seen order."""
    by_file: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_file[str(r.data["file"])].append(r)
    return by_file
