"""``// roofline: n=1<<20, T=double`` comments: the values and types a user gives the tool in
the source, and a loop's own ``// roofline: trips=64``."""

from __future__ import annotations

import functools
import re

from roofline_lsp.model.terms import TRIPS_HINT

__all__ = ["loop_trips_hint", "parse_assignments", "parse_hints"]

_HINT = re.compile(r"//\s*roofline\s*:\s*(.*)$|/\*\s*roofline\s*:\s*(.*?)\*/", re.M)
# the separator before a ``name=`` (not ``==``) that starts the next assignment
_NEXT_ASSIGNMENT = re.compile(r"[,;\s]+(?=[A-Za-z_][\w.]*\s*=(?!=))")


def parse_hints(source: bytes | str) -> dict[str, str]:
    """``// roofline: n=1<<20, m = 64`` comments -> {"n": "1<<20", "m": "64"} (without the
    per-loop ``trips=``)."""
    return dict(_hints(source))


def loop_trips_hint(comment: str) -> str | None:
    """The ``trips=`` value of a ``// roofline:`` comment, if it gives one."""
    m = _HINT.search(comment)
    if m is None:
        return None
    return parse_assignments(m.group(1) or m.group(2) or "").get(TRIPS_HINT)


@functools.lru_cache(maxsize=16)  # asked once per kernel of the same source
def _hints(source: bytes | str) -> tuple[tuple[str, str], ...]:
    if isinstance(source, bytes):
        if b"roofline" not in source:
            return ()
        source = source.decode("utf-8", "replace")
    if "roofline" not in source:
        return ()
    out: dict[str, str] = {}
    for m in _HINT.finditer(source):
        out.update(parse_assignments(m.group(1) or m.group(2) or ""))
    out.pop(TRIPS_HINT, None)
    return tuple(out.items())


def parse_assignments(text_: str) -> dict[str, str]:
    """``"n=1<<20 m=64"`` or ``"n=1<<20, m=64"`` -> {"n": ..., "m": ...}; other words ignored
    (``--args``, the ``args`` setting and ``// roofline:`` hints)."""
    out: dict[str, str] = {}
    for part in _NEXT_ASSIGNMENT.split(text_.strip()):
        name, eq, val = part.partition("=")
        if eq and re.fullmatch(r"[A-Za-z_][\w.]*", name.strip()) and val.strip():
            out[name.strip()] = val.strip().rstrip(",;")
    return out
