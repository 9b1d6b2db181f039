"""A kernel's source text as the LLM sees it: whole source lines of the kernel, of the device
functions it calls and of the code before an offload region, numbered and fenced for a
prompt; and the normalised text (no comments, no layout) that cache keys and few-shot
retrieval compare, so a comment-only edit changes neither.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from roofline_lsp.model.kernel import Detection, Kernel

MAX_CONTEXT_LINES = 30  # lines of the enclosing function shown before an offload region

_OPERATOR_CHARS = frozenset("+-*/%<>=&|^!~.:#?")


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def normalise_kernel_source(text: str) -> str:
    """``text`` without comments and without whitespace that does not separate tokens.

    String and character literals are kept verbatim (a ``//`` inside a string is not a
    comment); line continuations disappear. Two sources that differ only in comments,
    indentation or line breaks normalise to the same text.
    """
    out: list[str] = []
    i, n = 0, len(text)
    gap = False
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                if text[i] == "\\" and text.startswith("\n", i + 1):
                    i += 1  # a line comment continued by a backslash
                i += 1
            gap = True
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            gap = True
            continue
        if c == "\\" and (text.startswith("\n", i + 1) or text.startswith("\r\n", i + 1)):
            i += 2 if text[i + 1] == "\n" else 3
            gap = True
            continue
        if c.isspace():
            gap = True
            i += 1
            continue
        if gap and out:
            prev = out[-1][-1]
            if (_word(prev) and _word(c)) or (prev in _OPERATOR_CHARS and c in _OPERATOR_CHARS):
                out.append(" ")
        gap = False
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(text[i:j])
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _fence(code: str, lang: str) -> tuple[str, str]:
    """Opening and closing fences longer than any backtick run inside ``code``, so the code
    cannot close its own block."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}", ticks


def fenced(code: str, lang: str) -> str:
    open_, close = _fence(code, lang)
    return f"{open_}\n{code.rstrip()}\n{close}\n"


def numbered(lines: Sequence[str], first_line: int, max_chars: int) -> str:
    """``  12| code`` lines; when over ``max_chars``, the middle is replaced by a marker."""
    width = len(str(first_line + len(lines)))
    rows = [f"{first_line + i:>{width}}| {line}" for i, line in enumerate(lines)]
    total = sum(len(r) + 1 for r in rows)
    if total <= max_chars:
        return "\n".join(rows)
    head: list[str] = []
    tail: list[str] = []
    budget_head, budget_tail = max_chars * 2 // 3, max_chars // 3
    for r in rows:
        if budget_head - len(r) - 1 < 0:
            break
        head.append(r)
        budget_head -= len(r) + 1
    for r in reversed(rows[len(head) :]):
        if budget_tail - len(r) - 1 < 0:
            break
        tail.insert(0, r)
        budget_tail -= len(r) + 1
    omitted = len(rows) - len(head) - len(tail)
    return "\n".join([*head, f"{'':>{width}}| ... {omitted} lines omitted ...", *tail])


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", "replace")


def kernel_lines(kernel: Kernel, detection: Detection) -> tuple[int, list[str]]:
    """The whole source lines of the kernel (definition / pragma + statement) and the 1-based
    line of the first."""
    src = detection.source
    if src and 0 <= kernel.span.start_byte <= kernel.span.end_byte <= len(src):
        start = src.rfind(b"\n", 0, kernel.span.start_byte) + 1
        end = src.find(b"\n", kernel.span.end_byte)
        end = len(src) if end < 0 else end
        return kernel.span.start_point[0] + 1, _decode(src[start:end]).splitlines()
    if kernel.node is not None:
        return kernel.span.start_point[0] + 1, _decode(kernel.node.text).splitlines()
    return kernel.line, []


def function_text(detection: Detection, name: str) -> tuple[int, list[str], str] | None:
    fn = detection.functions.get(name)
    if fn is None or fn.node is None:
        return None
    text = _decode(fn.node.text)
    return fn.span.start_point[0] + 1, text.splitlines(), os.path.basename(fn.file)


def context_before(kernel: Kernel, detection: Detection) -> tuple[int, list[str]] | None:
    """Up to MAX_CONTEXT_LINES lines of the enclosing function before an offload region
    (declarations of the arrays and sizes the region uses)."""
    if not kernel.is_offload or kernel.node is None or not detection.source:
        return None
    p = kernel.node.parent
    while p is not None and p.type != "function_definition":
        p = p.parent
    if p is None:
        return None
    first = p.start_point.row
    last = kernel.span.start_point[0] - 1
    if last < first:
        return None
    first = max(first, last - MAX_CONTEXT_LINES + 1)
    lines = _decode(detection.source).splitlines()[first : last + 1]
    return first + 1, lines
