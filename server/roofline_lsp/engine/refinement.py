"""Where a verdict comes from, in one place.

Authority, highest first: a **measured** Nsight Compute profile, then an **LLM**'s answer
(opt-in), then the **static** estimate, whose FLOP and integer counts come from the compiler's
PTX when a compile gave them and from the source otherwise. The CLI's ``check`` and ``eval``,
the benchmarks and the language server all take their verdicts from these functions, so
``eval`` measures what the editor shows.
"""

from __future__ import annotations

from collections.abc import Sequence

from roofline_lsp.compiler.kernel_ptx import CompiledCounts
from roofline_lsp.estimate.roofline import Inputs, estimate
from roofline_lsp.llm.backend import LlmBackend
from roofline_lsp.measured.ncu import MeasuredProfile
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.kernel import Detection, Kernel, LaunchSite
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.syntax.sources import SourceReader, source_view

# Verdict.source values, most authoritative first.
AUTHORITY: tuple[str, ...] = ("profile", "llm", "static")


def kernel_verdict(
    kernel: Kernel,
    detection: Detection,
    gpu: GpuProfile,
    config: Config,
    *,
    inputs: Inputs | None = None,
    measured: MeasuredProfile | None = None,
    compiled: CompiledCounts | None = None,
    read: SourceReader | None = None,
) -> Verdict:
    """The verdict of ``kernel`` on ``gpu`` before any LLM: measured when the profile covers
    the kernel, else the static estimate (with ``compiled``: PTX counts, or the reason there
    are none; ``read``: how the estimator reads the folder's other files, open buffers
    first, else the disk)."""
    if measured is not None:
        v = measured.verdict_for(kernel, gpu)
        if v is not None:
            return v
    return estimate(kernel, detection, gpu, inputs, config, compiled=compiled, read=read)


def kernel_verdicts(
    kernel: Kernel,
    detection: Detection,
    gpus: Sequence[GpuProfile],
    config: Config,
    *,
    inputs: Inputs | None = None,
    measured: MeasuredProfile | None = None,
    compiled: CompiledCounts | None = None,
    read: SourceReader | None = None,
) -> tuple[Verdict, ...]:
    """:func:`kernel_verdict` on every GPU of ``gpus`` (the target first)."""
    view = source_view(read)  # the same view of the other files on every GPU
    return tuple(
        kernel_verdict(
            kernel,
            detection,
            gpu,
            config,
            inputs=inputs,
            measured=measured,
            compiled=compiled,
            read=view,
        )
        for gpu in gpus
    )


def wants_llm(verdict: Verdict) -> bool:
    """Whether an LLM answer may replace ``verdict``: only a static estimate is replaced (a
    measured verdict outranks the LLM, and an LLM verdict is already one)."""
    return AUTHORITY.index(verdict.source) > AUTHORITY.index("llm")


async def ask_llm(
    backend: LlmBackend,
    kernel: Kernel,
    detection: Detection,
    gpu: GpuProfile,
    static: Verdict | None,
    *,
    inputs: Inputs | None = None,
) -> Verdict:
    """The LLM's verdict for ``kernel`` on ``gpu``. The prompt carries the static verdict and
    the launch: ``inputs`` when the caller knows them (``eval``'s rows), else the first
    visible launch site. Raises the backend's errors."""
    launch: LaunchSite | None = None
    if inputs is None:
        launches = detection.launches_of(kernel)
        launch = launches[0] if launches else None
    return await backend.verdict(
        kernel, detection, gpu, static=static, launch=launch, inputs=inputs
    )
