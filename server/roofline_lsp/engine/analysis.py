"""One file's analysis: detection, then a verdict per kernel and GPU (``refinement``), reusing
the verdicts of kernels an edit did not touch (``reuse``). Shared by the CLI, ``eval``, the
benchmarks and the language server; knows nothing of LSP.

The LLM refines these verdicts asynchronously (``workspace``); it is not called here so that
this stays synchronous and fast.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from tree_sitter import Tree

from roofline_lsp.compiler.kernel_ptx import CompiledCounts
from roofline_lsp.detect.kernels import detect, detect_with_reads
from roofline_lsp.detect.program import Unit, remember_unit, unit_of
from roofline_lsp.engine.refinement import kernel_verdicts
from roofline_lsp.engine.reuse import ContextKeys, file_context, moved_verdicts
from roofline_lsp.estimate.roofline import Inputs
from roofline_lsp.measured.ncu import MeasuredProfile
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.report import FileReport, KernelReport
from roofline_lsp.model.stamps import FileStamp
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.syntax.parsing import language_for_path, parse
from roofline_lsp.syntax.sources import SourceReader, is_current, source_view


def analyze_file(
    source: bytes,
    path: str,
    gpus: tuple[GpuProfile, ...],
    config: Config | None = None,
    *,
    tree: Tree | None = None,
    inputs: Inputs | None = None,
    measured: MeasuredProfile | None = None,
    previous: FileReport | None = None,
    compiled: Mapping[int, CompiledCounts] | None = None,
    read: SourceReader | None = None,
) -> FileReport:
    """Detect the kernels of ``source`` and give each a verdict on every GPU of ``gpus``.

    ``tree`` is a tree already parsed from ``source`` (the server keeps one per document);
    ``inputs`` are launch/argument values the user gave (else ``config.args``); the estimator
    also reads visible launch sites and ``// roofline: n=...`` hint comments itself.
    ``measured`` is an imported Nsight Compute profile. ``previous`` is the last report of the
    same document: detection re-walks only what changed, and kernels whose context key is
    unchanged keep their verdicts (``reuse``). ``compiled`` maps a kernel's line to its
    compiler (PTX) counts or why there are none; those kernels are always re-estimated.
    ``read`` reads the files besides ``source`` (included headers, the folder's other files):
    the server passes one that answers open buffers first; without it they come from disk.
    """
    config = config or Config()
    if inputs is None and config.args:
        inputs = Inputs(args=config.args)
    view = source_view(read)  # one consistent view of the other files for the whole analysis
    if previous is not None and not all(is_current(s, view) for s in previous.reads):
        # a header or sibling file it read changed (an edited buffer): estimate every kernel
        previous = replace(previous, reuse={}, reads=())
    # a file parsed and detected already as a sibling of another is not again (and one
    # parsed here is kept for its siblings); never a tree the caller edits
    fresh = tree is None and previous is None
    unit = unit_of(path, source, view) if fresh else None
    if unit is not None and unit.tree is not None:
        tree, detection = unit.tree, unit.detection
    elif fresh:
        tree = parse(source, language_for_path(path))
        detection, headers = detect_with_reads(source, path, tree, read=view)
        remember_unit(Unit(path, detection, tree.root_node, tree), headers, view)
    else:
        tree = tree or parse(source, language_for_path(path))
        detection = detect(
            source, path, tree, previous.detection if previous is not None else None, read=view
        )
    keys = ContextKeys(
        detection, file_context(detection, tree.root_node, gpus, inputs, config, measured)
    )
    reuse: dict[str, tuple[int, tuple[Verdict, ...]]] = {}
    reports = []
    for k in detection.kernels:
        key = keys.of(k)
        cc = compiled.get(k.line) if compiled is not None else None
        # a kernel given a compile's outcome is estimated again: with its PTX counts, or with
        # the reason there are none in its terms
        hit = previous.reuse.get(key) if previous is not None and cc is None else None
        if hit is not None and hit[0] != k.line:
            moved = moved_verdicts(hit[1], k, hit[0], detection)
            hit = None if moved is None else (k.line, moved)
        if hit is None:
            verdicts = kernel_verdicts(
                k,
                detection,
                gpus,
                config,
                inputs=inputs,
                measured=measured,
                compiled=cc,
                read=view,
            )
            hit = (k.line, verdicts)
        reuse[key] = hit
        reports.append(KernelReport(k, hit[1], key))
    reads: tuple[FileStamp, ...] = ()
    if view is not None:
        kept = previous.reads if previous is not None else ()
        own = os.path.normpath(path)  # the file's own text is what reuse keys on already
        reads = tuple(
            s for s in dict.fromkeys((*kept, *view.stamps())) if os.path.normpath(s.path) != own
        )
    return FileReport(path, detection, tuple(reports), tree, reuse, reads)
