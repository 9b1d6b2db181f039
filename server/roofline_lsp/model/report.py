"""What an analysis gives: each kernel of a file with its verdict per GPU."""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Tree

from roofline_lsp.model.kernel import Detection, Kernel
from roofline_lsp.model.stamps import FileStamp
from roofline_lsp.model.verdict import Verdict


@dataclass(frozen=True)
class KernelReport:
    kernel: Kernel
    verdicts: tuple[Verdict, ...]  # one per GPU, target GPU first
    key: str = field(default="", compare=False)  # context key (``reuse.ContextKeys``)

    @property
    def verdict(self) -> Verdict:
        return self.verdicts[0]


@dataclass(frozen=True)
class FileReport:
    path: str
    detection: Detection
    kernels: tuple[KernelReport, ...]
    tree: Tree | None = field(default=None, compare=False, repr=False)
    # (kernel line, verdicts) by kernel context key, for the next analysis (``reuse``)
    reuse: dict[str, tuple[int, tuple[Verdict, ...]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    # the other files (headers, siblings) the analysis read through an editor's view, with
    # the versions read: the verdicts are reused only while these are current
    reads: tuple[FileStamp, ...] = field(default=(), compare=False, repr=False)
