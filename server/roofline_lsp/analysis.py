"""One file's analysis: detection, then a verdict per kernel and GPU from the static estimator
(or a measured profile). Shared by the CLI and the server; knows nothing of LSP.

The LLM backend refines these verdicts asynchronously (``llm.py``); it is not called here so
that this stays synchronous and fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Tree

from .config import Config
from .gpus import GpuProfile
from .kernels import Detection, Kernel, detect
from .parsing import language_for_path, parse
from .roofline import Inputs, estimate
from .verdict import Verdict


@dataclass(frozen=True)
class KernelReport:
    kernel: Kernel
    verdicts: tuple[Verdict, ...]  # one per GPU, target GPU first

    @property
    def verdict(self) -> Verdict:
        return self.verdicts[0]


@dataclass(frozen=True)
class FileReport:
    path: str
    detection: Detection
    kernels: tuple[KernelReport, ...]
    tree: Tree | None = field(default=None, compare=False, repr=False)


def analyze_file(
    source: bytes,
    path: str,
    gpus: tuple[GpuProfile, ...],
    config: Config | None = None,
    *,
    tree: Tree | None = None,
    inputs: Inputs | None = None,
    measured: object | None = None,
) -> FileReport:
    """Detect the kernels of ``source`` and estimate each on every GPU of ``gpus``.

    ``tree`` is a tree already parsed from ``source`` (the server keeps one per document);
    ``inputs`` are launch/argument values the user gave (else ``config.args``); the estimator
    also reads visible launch sites and ``// roofline: n=...`` hint comments itself.
    ``measured`` is a :class:`roofline_lsp.profile.MeasuredProfile` or None.
    """
    config = config or Config()
    if inputs is None and config.args:
        inputs = Inputs(args=config.args)
    if tree is None:
        tree = parse(source, language_for_path(path))
    detection = detect(source, path, tree)
    reports = []
    for k in detection.kernels:
        verdicts = []
        for gpu in gpus:
            v = None
            if measured is not None:
                v = measured.verdict_for(k, gpu)  # type: ignore[attr-defined]
            if v is None:
                v = estimate(k, detection, gpu, inputs, config)
            verdicts.append(v)
        reports.append(KernelReport(k, tuple(verdicts)))
    return FileReport(path, detection, tuple(reports), tree)
