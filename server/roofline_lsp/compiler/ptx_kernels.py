"""Queries for the estimator: the kernels of a parsed PTX module matching a name and their
per-line counts, with (by default) those of the device functions they call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from roofline_lsp.compiler.instruction_mix import EMPTY, LineMix
from roofline_lsp.compiler.ptx_parser import Key, PtxFunction, PtxModule

__all__ = ["Attribution", "KernelCounts", "counts_for_kernel", "find_kernels", "kernel_counts"]

Attribution = Literal["direct", "callsite"]


@dataclass(frozen=True)
class KernelCounts:
    kernel: PtxFunction
    lines: Mapping[Key, LineMix] = field(compare=False)
    functions: tuple[str, ...]  # the kernel and every function whose lines are included

    @property
    def total(self) -> LineMix:
        out = EMPTY
        for m in self.lines.values():
            out = out + m
        return out


def find_kernels(module: PtxModule, name: str) -> tuple[PtxFunction, ...]:
    """Kernels matching ``name``: the mangled symbol, the qualified base name, or the last
    component of it (``saxpy`` matches ``ns::saxpy``), in PTX order."""
    fs = list(module.functions.values())
    preds: tuple[Callable[[PtxFunction], bool], ...] = (
        lambda f: f.name == name,
        lambda f: f.is_kernel and f.base_name == name,
        lambda f: f.is_kernel and f.short_name == name.rsplit("::", 1)[-1],
    )
    for pred in preds:
        hits = tuple(f for f in fs if pred(f))
        if hits:
            return hits
    return ()


def counts_for_kernel(
    module: PtxModule,
    kernel_name: str,
    attribution: Attribution = "direct",
    include_callees: bool = True,
) -> dict[Key, LineMix] | None:
    """Per-(file, line) counts of the kernel ``kernel_name`` (the first match of
    :func:`find_kernels`); None when the module has no such kernel (e.g. a template never
    instantiated). ``attribution="direct"`` keys instructions by their own line (an inlined
    device function's lines are its own); ``"callsite"`` by the outermost ``inlined_at`` call
    site, i.e. the kernel body line. With ``include_callees`` the lines of every ``.func``
    called (transitively) are merged in, once each; the call-site lines name them in
    ``LineMix.calls``."""
    kc = kernel_counts(module, kernel_name, attribution, include_callees)
    return dict(kc.lines) if kc is not None else None


def kernel_counts(
    module: PtxModule,
    kernel_name: str,
    attribution: Attribution = "direct",
    include_callees: bool = True,
) -> KernelCounts | None:
    hits = find_kernels(module, kernel_name)
    if not hits:
        return None
    kernel = hits[0]
    order = [kernel.name]
    if include_callees:
        todo = list(kernel.calls)
        while todo:
            c = todo.pop(0)
            if c in order or c not in module.functions:
                continue
            order.append(c)
            todo.extend(module.functions[c].calls)
    lines: dict[Key, LineMix] = {}
    for fname in order:
        f = module.functions[fname]
        src = f.lines if attribution == "direct" else f.callsite_lines
        for k, m in src.items():
            lines[k] = lines.get(k, EMPTY) + m
    return KernelCounts(kernel, lines, tuple(order))
