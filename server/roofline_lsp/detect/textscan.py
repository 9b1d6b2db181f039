"""Text-level scanning of C/CUDA source bytes, for what a broken parse hides: the end of a
definition, a statement or a parameter list, ``#if`` branches, masking all but a region (byte
offsets unchanged), and the kernel named by a launch's text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', re.S)


def strip_comments(text: str) -> str:
    """``text`` without its ``//`` and ``/* */`` comments (string and character literals
    kept): a ``#define N 4096 // elements`` value is ``4096``."""
    if "/" not in text:
        return text
    return _COMMENT_OR_STRING.sub(
        lambda m: m.group(0) if m.group(0)[0] in "\"'" else " ", text
    ).strip()


def kernel_ref(text: str) -> str:
    """`(void*)k`, `k<T, 4>`, `(k<T, 4>)`, `HIP_KERNEL_NAME(k<T>)`, `&k`, `ns::k` -> `k`."""
    text = text.strip()
    if _IDENTIFIER.fullmatch(text):  # the common case, cheaply
        return text
    m = re.match(r"\s*HIP_KERNEL_NAME\s*\((.*)\)\s*$", text, re.S)
    if m:
        text = m.group(1)
    while text.startswith("(") and text.endswith(")") and "(" not in text[1:-1]:
        text = text[1:-1].strip()  # `hipLaunchKernelGGL((k<T, 4>), ...)`
    text = re.sub(r"^\(\s*(?:const\s+)?void\s*\*\s*\)", "", text).strip().lstrip("&").strip()
    text = re.sub(r"\(\s*void\s*\*\s*\)", "", text).strip()
    depth, out = 0, []
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip()
    m2 = re.search(r"([A-Za-z_][A-Za-z_0-9]*)\s*$", name)
    return m2.group(1) if m2 else ""


def definition_end(source: bytes, pos: int, limit: int | None = None) -> int | None:
    """From just after `__global__`, the end of the definition's `{...}` body, or None for a
    declaration (`;` before `{`) or a body not closed before ``limit`` (braces a broken
    parse or an ``#if`` left unbalanced)."""
    n = len(source) if limit is None else min(limit, len(source))
    i = pos
    depth = 0
    while i < n:
        ch = source[i]
        if ch == 0x28:  # (
            depth += 1
        elif ch == 0x29:
            depth -= 1
        elif ch == 0x3B and depth == 0:  # ;
            return None
        elif ch == 0x7B and depth == 0:  # {
            break
        i += 1
        if i - pos > 4000:
            return None
    depth = 0
    while i < n:
        ch = source[i]
        if ch == 0x7B:
            depth += 1
        elif ch == 0x7D:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def skip_blank(src: bytes, i: int) -> int:
    """Skip white space and comments."""
    n = len(src)
    while i < n:
        if src[i : i + 1].isspace():
            i += 1
        elif src.startswith(b"//", i):
            nl = src.find(b"\n", i)
            i = n if nl < 0 else nl + 1
        elif src.startswith(b"/*", i):
            e = src.find(b"*/", i + 2)
            i = n if e < 0 else e + 2
        else:
            break
    return i


def statement_end(src: bytes, i: int) -> int | None:
    """End of the statement starting at ``i``: a ``{...}`` block, a loop or if with its
    header and body, or a simple statement up to ``;``."""
    n = len(src)
    if i >= n:
        return None
    if src[i] == 0x7B:  # {
        depth, j, limit = 0, i, min(n, i + 400_000)
        while j < limit:
            c = src[j]
            if c == 0x23 and not src[src.rfind(b"\n", 0, j) + 1 : j].strip():
                # only the first branch of an #if counts: skip #else/#elif ... #endif
                if re.match(rb"#\s*(else|elif)", src[j : j + 8]):
                    j = _skip_to_endif(src, j)
                    continue
            elif c == 0x7B:
                depth += 1
            elif c == 0x7D:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return None
    m = re.match(rb"(for|while|if)\s*\(", src[i : i + 16])
    if m:
        j = close_paren(src, i + m.end() - 1, n)
        return statement_end(src, skip_blank(src, j + 1))
    j = src.find(b";", i)
    return None if j < 0 else j + 1


def close_paren(src: bytes, open_: int, stop: int) -> int:
    """Position of the ``)`` matching the ``(`` at ``open_``, or ``stop`` when it is not
    closed before ``stop``."""
    depth, j = 0, open_
    while j < stop:
        if src[j] == 0x28:
            depth += 1
        elif src[j] == 0x29:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return stop


def params_end(src: bytes, i: int, stop: int) -> int | None:
    """Position of the ``)`` closing a kernel's parameter list, searching from just after
    ``__global__`` (``__launch_bounds__(...)`` skipped)."""
    while i < stop:
        open_ = src.find(b"(", i, stop)
        if open_ < 0:
            return None
        j = close_paren(src, open_, stop)
        if not re.search(rb"__launch_bounds__\s*$", src[i:open_]):
            return j
        i = j + 1
    return None


def _skip_to_endif(src: bytes, j: int) -> int:
    """From an ``#else``/``#elif`` line, the position of its matching ``#endif``."""
    level = 0
    for m in re.finditer(rb"(?m)^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b", src[j:]):
        if m.group(1) == b"endif":
            if level == 0:
                return j + m.start()
            level -= 1
        else:
            level += 1
    return len(src)


def blank_else_branches(buf: bytearray, start: int, end: int) -> None:
    """In ``buf[start:end]``, blank conditional-directive lines and every ``#else``/``#elif``
    branch, so that only the first branch of each ``#if`` is parsed."""
    j = start
    while j < end:
        nl = buf.find(b"\n", j, end)
        line_end = end if nl < 0 else nl
        line = bytes(buf[j:line_end]).strip()
        if re.match(rb"#\s*(else|elif)", line):
            stop = min(end, _skip_to_endif(bytes(buf), line_end))
            buf[j:stop] = blank(bytes(buf[j:stop]))
            j = stop
            continue
        if re.match(rb"#\s*(if|ifdef|ifndef|endif)\b", line):
            buf[j:line_end] = b" " * (line_end - j)
        j = line_end + 1


_CONDITIONAL_LINE = re.compile(
    rb"[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b"
)


def repaired(source: bytes, keep: int, empty_macros: Iterable[str]) -> bytes:
    """A copy of ``source`` (offsets and lines unchanged) to parse again where the grammar
    broke on what the preprocessor would have removed: of each ``#if``, one branch (the one
    holding byte ``keep``, else the first; an ``#ifdef`` splitting a brace pair across its
    branches parses), its directive lines blanked; and the object-like macros that expand
    to nothing (``#define DEV`` before ``DEV static int f(...)``) blanked where used."""
    buf = bytearray(source)
    blanks: list[tuple[int, int]] = []
    stack: list[list[tuple[int, int]]] = []  # per open #if: its branches' [start, end)
    pos = 0
    while pos < len(source):
        nl = source.find(b"\n", pos)
        end = len(source) if nl < 0 else nl
        while end < len(source) and source[end - 1 : end] == b"\\":  # continued directive
            nl = source.find(b"\n", end + 1)
            end = len(source) if nl < 0 else nl
        m = _CONDITIONAL_LINE.match(source, pos, end)
        if m is not None:
            word = m.group(1)
            blanks.append((pos, end))
            if word in (b"if", b"ifdef", b"ifndef"):
                stack.append([(end, -1)])
            elif stack:
                branches = stack[-1]
                branches[-1] = (branches[-1][0], pos)
                if word == b"endif":
                    stack.pop()
                    kept = next((b for b in branches if b[0] <= keep < b[1]), branches[0])
                    blanks.extend(b for b in branches if b != kept)
                else:
                    branches.append((end, -1))
        pos = end + 1
    for a, b in blanks:
        buf[a:b] = blank(bytes(buf[a:b]))
    names = sorted(empty_macros)
    if names:
        used = re.compile(rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")
        for m in used.finditer(bytes(buf)):
            line_start = buf.rfind(b"\n", 0, m.start()) + 1
            if not bytes(buf[line_start : m.start()]).lstrip().startswith(b"#"):
                buf[m.start() : m.end()] = b" " * (m.end() - m.start())
    return bytes(buf)


_NOT_CODE = re.compile(
    rb"//[^\n]*|/\*[\s\S]*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
    rb"|(?m:^[ \t]*#(?:[^\n]*\\\n)*[^\n]*)"
)
# what a block's head says when it is not a function's: a namespace, a linkage block, a
# record, an enum, an initializer (``= {``)
_SCOPE_HEAD = re.compile(rb"\b(?:namespace|extern|class|struct|union|enum)\b|=\s*$")
_TEMPLATE_HEAD = re.compile(rb"\btemplate\s*<[^{};]*?>")
# a function head's end: the parameter list, then qualifiers or a trailing return type
_FUNCTION_HEAD_END = re.compile(
    rb"\)\s*(?:(?:const|volatile|noexcept|override|final|mutable|&&?|->[^{;()]*)\s*)*$"
)


def function_block(source: bytes, at: int) -> tuple[int, int, int] | None:
    """The outermost function around byte ``at`` by the braces of its text (comments,
    literals and preprocessor lines left out; namespace, ``extern "C"`` and class bodies
    seen through): the start of its head (after the previous declaration), its body's
    opening brace and the end of its body; None when no function holds ``at``."""
    code = re.sub(_NOT_CODE, lambda m: blank(m.group(0)), source)
    heads = [0]  # per depth: where the next declaration's head starts
    opened: list[tuple[int, int]] = []  # per open brace: (its head's start, its position)
    found: tuple[int, int] | None = None
    for m in re.finditer(rb"[{};]", code):
        pos, ch = m.start(), m.group(0)
        if found is None and pos > at:
            for head, brace in opened:
                text = code[head:brace]
                # a scope's keyword before any parameter list, past a template header
                # (``template <class T>``, ``f(struct S *s)`` are functions)
                lead = _TEMPLATE_HEAD.sub(b" ", text).split(b"(", 1)[0]
                if not _SCOPE_HEAD.search(lead) and _FUNCTION_HEAD_END.search(text.rstrip()):
                    found = (head, brace)
                    break
            if found is None:
                return None
        if ch == b"{":
            opened.append((heads[-1], pos))
            heads.append(pos + 1)
        elif ch == b"}":
            if not opened:
                return None
            _head, brace = opened.pop()
            heads.pop()
            heads[-1] = pos + 1
            if found is not None and brace == found[1]:
                return found[0], found[1], pos + 1
        else:
            heads[-1] = pos + 1
    return None


# every byte a space but a newline's
_BLANK = bytes(b if b == 0x0A else 0x20 for b in range(256))


def blank(text: bytes) -> bytes:
    """``text`` with every byte but its newlines a space (offsets and lines unchanged)."""
    return text.translate(_BLANK)


def mask_outside(source: bytes, start: int, end: int) -> bytes:
    """Blank everything outside [start, end) but keep newlines, so byte offsets and points
    of the kept region are unchanged."""
    return blank(source[:start]) + source[start:end] + blank(source[end:])


# the index built-ins of early HIP (``hip/hip_runtime.h`` defines them as the CUDA names)
HIP_INDEX_MACROS = {
    f"hip{hip}_{axis}": f"{cuda}.{axis}"
    for hip, cuda in (
        ("ThreadIdx", "threadIdx"),
        ("BlockIdx", "blockIdx"),
        ("BlockDim", "blockDim"),
        ("GridDim", "gridDim"),
    )
    for axis in "xyz"
}


def is_hip_source(path: str, source: bytes) -> bool:
    return path.lower().endswith(".hip") or b"hip/hip_runtime" in source[:20000]
