"""Text-level scanning of C/CUDA source bytes, for what a broken parse hides: the end of a
definition, a statement or a parameter list, ``#if`` branches, masking all but a region (byte
offsets unchanged), and the kernel named by a launch's text.
"""

from __future__ import annotations

import re

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


def definition_end(source: bytes, pos: int) -> int | None:
    """From just after `__global__`, the end of the definition's `{...}` body, or None for a
    declaration (`;` before `{`)."""
    n = len(source)
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
        j = _close_paren(src, i + m.end() - 1, n)
        return statement_end(src, skip_blank(src, j + 1))
    j = src.find(b";", i)
    return None if j < 0 else j + 1


def _close_paren(src: bytes, open_: int, stop: int) -> int:
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
        j = _close_paren(src, open_, stop)
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
            buf[j:stop] = re.sub(rb"[^\n]", b" ", bytes(buf[j:stop]))
            j = stop
            continue
        if re.match(rb"#\s*(if|ifdef|ifndef|endif)\b", line):
            buf[j:line_end] = b" " * (line_end - j)
        j = line_end + 1


def mask_outside(source: bytes, start: int, end: int) -> bytes:
    """Blank everything outside [start, end) but keep newlines, so byte offsets and points
    of the kept region are unchanged."""
    head = re.sub(rb"[^\n]", b" ", source[:start])
    tail = re.sub(rb"[^\n]", b" ", source[end:])
    return head + source[start:end] + tail


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
