"""Loops over one row of a compressed layout (``estimate/row_ranges.py``) on small sources."""

from __future__ import annotations

from roofline_lsp.estimate.row_ranges import row_range
from roofline_lsp.syntax.expr import loop_header, text
from roofline_lsp.syntax.parsing import parse


def _rows(body: str) -> dict[str, tuple[str, list[str]] | None]:
    """Loop variable -> (offsets array, item arrays) of each ``for`` in ``body``."""
    root = parse(f"void f() {{\n{body}\n}}\n".encode()).root_node
    out: dict[str, tuple[str, list[str]] | None] = {}
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "for_statement":
            hdr = loop_header(n)
            assert hdr is not None and hdr.var is not None
            r = row_range(hdr, n)
            out[hdr.var] = None if r is None else (text(r.offsets), [text(a) for a in r.items])
        stack.extend(n.named_children)
    return out


def test_the_offsets_and_the_arrays_the_row_indexes() -> None:
    got = _rows(
        "int beg = ptr[r], end = ptr[r + 1];\n"
        "for (int k = beg; k < end; k++) s += val[k] * x[col[k]];\n"
        "for (int j = ptr[r]; j != ptr[r + 1]; ++j) s += val[j];\n"
        "for (int m = 0; m < ptr[r + 1] - ptr[r]; m++) s += val[beg + m];\n"
        "end = ptr[r + 2];\n"
        "for (int a = beg; a < end; a++) s += val[a];\n"  # not consecutive offsets
        "for (int b = ptr[r]; b < idx[r + 1]; b++) s += val[b];\n"  # two arrays
        "for (int c = ptr[r]; c < ptr[r + 1]; c += 2) s += val[c];\n"  # step 2
        "for (int d = ptr[r]; d < ptr[r + 1]; d++) s += 1;\n"  # indexes nothing
    )
    assert got["k"] == ("ptr", ["val", "col"])  # x is indexed by col[k], not by k
    assert got["j"] == ("ptr", ["val"])
    assert got["m"] == ("ptr", ["val"])
    assert got["a"] is None and got["b"] is None and got["c"] is None and got["d"] is None
