"""tree-sitter parsing: one CUDA/C++ grammar for every supported file, and the query files.

The CUDA grammar (tree-sitter-cuda) is a superset of the C++ one, so ``.cu``, ``.hip``,
``.cpp`` and ``.c`` files all parse with it; HIP and OpenMP sources are C++ with pragmas.
"""

from __future__ import annotations

import functools
import os
from importlib import resources

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

SOURCE_EXTENSIONS: tuple[str, ...] = (
    ".cu",
    ".cuh",
    ".cpp",
    ".cc",
    ".cxx",
    ".c",
    ".h",
    ".hpp",
    ".hip",
    ".inc",
)
# LSP language ids we analyse
LANGUAGE_IDS: frozenset[str] = frozenset({"cuda", "cuda-cpp", "cpp", "c", "hip"})


@functools.cache
def cuda_language() -> Language:
    return Language(tree_sitter_cuda.language())


def language_for_path(path: str) -> Language:
    """The grammar for a file. Every supported extension uses the CUDA grammar."""
    return cuda_language()


def is_source_path(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in SOURCE_EXTENSIONS


def new_parser(language: Language | None = None) -> Parser:
    return Parser(language or cuda_language())


def parse(source: bytes, language: Language | None = None, old_tree: Tree | None = None) -> Tree:
    """Parse ``source``; with ``old_tree`` (already ``edit``-ed) the parse is incremental."""
    parser = new_parser(language)
    if old_tree is not None:
        return parser.parse(source, old_tree)
    return parser.parse(source)


@functools.cache
def query(*names: str) -> Query:
    """Load ``grammars/<name>.scm`` files (shipped inside the package) as one compiled query.

    Several files make one query so that the tree is walked once: a query's cost is mostly
    the walk (~25 ms for a 5,000-line file), whatever its number of patterns.
    """
    grammars = resources.files("roofline_lsp").joinpath("grammars")
    text = "\n".join(grammars.joinpath(f"{n}.scm").read_text("utf-8") for n in names)
    return Query(cuda_language(), text)


def captures(names: str | tuple[str, ...], node: Node) -> dict[str, list[Node]]:
    """Run the query (or queries) ``names`` on ``node``: capture name -> nodes in document
    order."""
    q = query(names) if isinstance(names, str) else query(*names)
    result = QueryCursor(q).captures(node)
    return {k: sorted(v, key=lambda n: n.start_byte) for k, v in result.items()}
