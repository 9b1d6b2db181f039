"""What kernel detection finds: kernels, launch sites, data regions, callable functions.

Pure data (see ``detect/`` for how it is found). Every position is a byte offset or a 0-based
(row, byte column) point as tree-sitter gives them; ``line`` fields are 1-based.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Literal

from tree_sitter import Node

KernelLanguage = Literal["cuda", "hip", "omp", "acc"]

# What one top-level node of a file captured (``syntax.parsing.top_level_captures``):
# (capture, start, end, node type), offsets relative to the node's start. Keyed by the root's
# type (a broken file's root may be an ERROR node, which changes what patterns anchored at the
# root match), the node's type and its text.
CaptureMemo = dict[tuple[str, str, bytes], tuple[tuple[str, int, int, str], ...]]


@dataclass(frozen=True)
class Span:
    """A byte range with its 0-based start/end points (row, byte column)."""

    start_byte: int
    end_byte: int
    start_point: tuple[int, int]
    end_point: tuple[int, int]

    @classmethod
    def of(cls, node: Node) -> Span:
        return cls(
            node.start_byte,
            node.end_byte,
            (node.start_point.row, node.start_point.column),
            (node.end_point.row, node.end_point.column),
        )

    def contains(self, byte: int) -> bool:
        return self.start_byte <= byte <= self.end_byte


@dataclass(frozen=True)
class Clause:
    """One OpenMP/OpenACC clause, e.g. ``map(tofrom: a[0:n])`` -> name='map',
    modifier='tofrom', items=('a[0:n]',)."""

    name: str
    text: str
    modifier: str = ""
    items: tuple[str, ...] = ()


@dataclass(frozen=True)
class Function:
    """A function definition in the translation unit (``__device__``, ``declare target``,
    or any other function a kernel may call)."""

    name: str
    file: str
    line: int
    span: Span
    qualifiers: tuple[str, ...]  # e.g. ("__device__", "__forceinline__")
    node: Node = field(compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...] | None  # None for object-like macros
    body: str
    line: int
    file: str


@dataclass(frozen=True)
class LaunchSite:
    """``k<<<grid, block, shmem, stream>>>(args)``, ``hipLaunchKernelGGL(k, grid, block, ...)``
    or ``cudaLaunchKernel((void*)k, grid, block, args, shmem, stream)``."""

    kernel: str
    file: str
    line: int
    span: Span
    form: Literal[
        "chevron",
        "hipLaunchKernelGGL",
        "cudaLaunchKernel",
        "cuLaunchKernel",
        "cudaLaunchKernelEx",
        "graphKernelNode",
    ]
    grid: str
    block: str
    shmem: str | None
    stream: str | None
    args: tuple[str, ...]
    grid_value: tuple[int, int, int] | None = None  # evaluated when constant
    block_value: tuple[int, int, int] | None = None
    shmem_value: int | None = None


@dataclass(frozen=True)
class DataRegion:
    """``target data``, ``target enter/exit data``, ``target update``, ``acc data``..."""

    language: KernelLanguage
    directive: str
    file: str
    line: int
    span: Span
    clauses: tuple[Clause, ...]
    # the statement a structured region (``target data``, ``acc data``) covers; None for
    # a standalone directive (``target enter data``, ``update``)
    body: Span | None = None


@dataclass(frozen=True)
class Kernel:
    name: str  # CUDA: function name; OpenMP/OpenACC: the enclosing function's name
    language: KernelLanguage
    file: str
    line: int  # 1-based line of the __global__ keyword or of the pragma
    end_line: int
    span: Span  # the whole definition / pragma + statement
    name_span: Span  # the identifier (CUDA) or the pragma (OpenMP/OpenACC)
    body_span: Span  # compound statement (CUDA) or the statement the pragma applies to
    # CUDA
    params: tuple[tuple[str, str], ...] = ()  # (type text, name)
    template_params: tuple[str, ...] = ()
    launch_bounds: tuple[str, ...] = ()
    qualifiers: tuple[str, ...] = ()
    # OpenMP / OpenACC
    directive: str = ""  # e.g. "target teams distribute parallel for simd"
    clauses: tuple[Clause, ...] = ()
    # shared
    callees: tuple[str, ...] = ()  # names of Functions (transitively) called from the body
    recovered: bool = False  # found inside an ERROR node
    node: Node = field(compare=False, hash=False, repr=False, default=None)  # type: ignore[assignment]
    body: Node = field(compare=False, hash=False, repr=False, default=None)  # type: ignore[assignment]
    # an offload region's host function, when only a repaired parse of the file (``detect.
    # textscan.repaired``) shows it (None: the function around ``node``)
    function: Node | None = field(compare=False, hash=False, repr=False, default=None)

    @property
    def is_offload(self) -> bool:
        return self.language in ("omp", "acc")

    def clause(self, name: str) -> tuple[Clause, ...]:
        return tuple(c for c in self.clauses if c.name == name)


_Dim3 = tuple[int, int, int] | None
_LaunchValues = tuple[_Dim3, _Dim3, float | None]


@dataclass
class DetectMemo:
    """What detecting one version of a document found, by text, for detecting the next one
    (``detect``'s ``previous``): an edit then costs a walk of what it touched."""

    captures: CaptureMemo = field(default_factory=dict)  # per top-level node
    calls: dict[bytes, tuple[str, ...]] = field(default_factory=dict)  # body text -> called
    # (function body text, offset in it) -> values of the local declarations before it
    locals: dict[tuple[bytes, int], dict[str, str]] = field(default_factory=dict)
    # (launch configuration texts, their environment) -> evaluated grid, block, shmem
    launches: dict[tuple[object, ...], _LaunchValues] = field(default_factory=dict)


@dataclass(frozen=True)
class Detection:
    """Everything detection found in one translation unit."""

    file: str
    kernels: tuple[Kernel, ...]
    functions: dict[str, Function]  # callable functions by name (incl. followed local headers)
    macros: dict[str, Macro]
    constants: dict[str, str]  # constexpr / const / #define values usable in expressions
    launches: tuple[LaunchSite, ...]
    data_regions: tuple[DataRegion, ...]
    source: bytes = field(repr=False, default=b"")
    # a file-scope constant's declared type (``const double dt = 0.1``: ``double``)
    constant_types: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # function name -> the functions of this file that call it
    callers: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    memo: DetectMemo = field(default_factory=lambda: DetectMemo(), compare=False, repr=False)

    @functools.cached_property
    def _launches_by_kernel(self) -> dict[str, tuple[LaunchSite, ...]]:
        """Kernel name -> its launches (made on first use: a file may launch thousands)."""
        by_name: dict[str, list[LaunchSite]] = {}
        for s in self.launches:
            by_name.setdefault(s.kernel, []).append(s)
        return {k: tuple(v) for k, v in by_name.items()}

    def launches_of(self, kernel: Kernel) -> tuple[LaunchSite, ...]:
        return self._launches_by_kernel.get(kernel.name, ())
