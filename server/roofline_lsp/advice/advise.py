"""Diagnostic rules and quick fixes: what limits a kernel on the exact lines that cause it.

Pure analysis, no LSP: :func:`advise` reads a :class:`~roofline_lsp.engine.analysis.FileReport`
(its tree-sitter nodes and bytes) and the target GPU, and returns
:class:`~roofline_lsp.advice.catalogue.Advice` items with byte spans and, where the fix is
mechanical, a :class:`~roofline_lsp.advice.catalogue.Fix` made of byte-span replacements that
keep the code compiling. Which rules fire depends on the verdict: advice that only matters for
a compute-bound kernel is not given for a bandwidth-bound one, and the reverse.
"""

from __future__ import annotations

from roofline_lsp.advice.advisor import KernelAdvisor
from roofline_lsp.advice.catalogue import Advice, by_impact
from roofline_lsp.advice.launch_config import small_launches
from roofline_lsp.model.gpus import GpuProfile, GpuRegistry, load_registry
from roofline_lsp.model.report import FileReport, KernelReport

VerdictKey = tuple[object, ...]


def _advice_relevant(kr: KernelReport) -> VerdictKey:
    """What of a kernel's target verdict its advice depends on, as data: unchanged when the
    kernel only moved (suggestion lines relative to the kernel; terms are not read)."""
    v = kr.verdicts[0]
    counts: VerdictKey | None = None
    if v.counts is not None:
        c = v.counts
        counts = (tuple(sorted(c.flops.items())), c.int_ops, c.bytes_loaded, c.bytes_stored)
        counts += (c.per, c.threads, c.counts_from)
    return (
        v.bound,
        v.source,
        v.deciding,
        v.confidence,
        tuple(sorted(v.ai.items())),
        tuple(sorted(v.ridge.items())),
        counts,
        tuple((s.line - kr.kernel.line, s.message) for s in v.suggestions),
    )


# (context key, GPU, verdict data) -> (kernel start byte, kernel line, its advice). Advice
# line references (the host loop of RL012) are in the kernel or its enclosing function,
# which the kernel's context key covers, so they move with it.
AdviceCache = dict[tuple[str, str, VerdictKey], tuple[int, int, tuple["Advice", ...]]]


def advise(
    report: FileReport, gpu: GpuProfile, cache: AdviceCache | None = None
) -> tuple[Advice, ...]:
    """Every piece of advice for the kernels of ``report`` on ``gpu`` (the target GPU, whose
    verdict is each KernelReport's first), sorted by position.

    ``cache`` (kept by the caller between analyses of one document, filled here) maps a
    kernel's context key, GPU and verdict to the advice found last time, so an edit re-runs
    the rules only for the kernels it changed; advice is moved with its kernel.
    """
    source = report.detection.source
    out: list[Advice] = []
    fresh: AdviceCache = {}
    for kr in report.kernels:
        if not kr.verdicts:
            continue
        span = kr.kernel.span
        ckey = (kr.key, gpu.name, _advice_relevant(kr))
        hit = cache.get(ckey) if cache is not None and kr.key else None
        if hit is not None:
            delta, lines = span.start_byte - hit[0], kr.kernel.line - hit[1]
            items = tuple(a.moved(delta, lines) for a in hit[2]) if delta else hit[2]
        else:
            items = tuple(KernelAdvisor(kr, report.detection, source, gpu).run())
        if kr.key and all(span.start_byte <= a.start and a.end <= span.end_byte for a in items):
            fresh[ckey] = (span.start_byte, kr.kernel.line, items)
        out.extend(items)
    if cache is not None:
        cache.clear()
        cache.update(fresh)
    out.extend(small_launches(report, gpu))
    seen: set[tuple[str, int, int]] = set()
    unique = []
    for a in sorted(out, key=lambda a: (a.start, a.code)):
        key = (a.code, a.start, a.end)
        if key not in seen:
            seen.add(key)
            unique.append(a)
    return tuple(unique)


# the last report given to file_advice, the registry and its advice: the text, JSON and SARIF
# writers of ``check`` each ask for the same report's advice in turn
_last: list[tuple[FileReport, GpuRegistry | None, tuple[Advice, ...]]] = []


def file_advice(report: FileReport, registry: GpuRegistry | None = None) -> tuple[Advice, ...]:
    """The advice of ``report`` for its target GPU (the first verdict's), as ``check``
    prints it. ``registry``: the GPU profiles the verdicts were made with (the bundled ones
    and the user's ``--gpu-profiles``; the bundled ones when None); none when the target GPU
    is not among them."""
    if _last and _last[0][0] is report and _last[0][1] is registry:
        return _last[0][2]
    target = next((kr.verdicts[0].gpu for kr in report.kernels if kr.verdicts), None)
    advice: tuple[Advice, ...] = ()
    if target is not None:
        try:
            gpu = (registry if registry is not None else load_registry()).get(target)
        except ValueError:
            gpu = None
        advice = advise(report, gpu) if gpu is not None else ()
    _last[:] = [(report, registry, advice)]
    return advice


def kernel_advice(report: FileReport, advice: tuple[Advice, ...]) -> list[list[Advice]]:
    """``advice`` split by the kernels of ``report`` (the kernel whose span holds it, else
    the kernel it names: a launch site), each most valuable first."""
    out: list[list[Advice]] = [[] for _ in report.kernels]
    for a in advice:
        i = next(
            (j for j, kr in enumerate(report.kernels) if kr.kernel.span.contains(a.start)),
            None,
        )
        if i is None:
            i = next((j for j, kr in enumerate(report.kernels) if kr.kernel.name == a.kernel), None)
        if i is not None:
            out[i].append(a)
    return [by_impact(items) for items in out]
