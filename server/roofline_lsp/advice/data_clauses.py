"""Data-clause checks of offload regions: ``map(tofrom:)`` / ``copy()`` of data the region only
reads (RL011) and data mapped on every iteration of a host loop (RL012).
"""

from __future__ import annotations

import os
import re

from tree_sitter import Node

from roofline_lsp.advice.catalogue import Fix, TextEdit
from roofline_lsp.advice.impact import unmodelled
from roofline_lsp.advice.kernel_context import KernelContext
from roofline_lsp.advice.nodes import (
    LOOPS,
    call_name,
    identifiers,
    parents,
    walk,
    written_names,
)
from roofline_lsp.detect.program import units_mentioning
from roofline_lsp.syntax.expr import text
from roofline_lsp.syntax.functions import function_declarator


class DataClauseChecks(KernelContext):
    """RL011, RL012: host-device transfers an offload region could avoid."""

    # RL011 ---------------------------------------------------------------------------------
    def map_clauses(self) -> None:
        written = written_names(self.k.body, self.aliases)
        used = identifiers(self.k.body)
        pragma = self.source[self.k.name_span.start_byte : self.k.name_span.end_byte]
        base = self.k.name_span.start_byte
        for clause in self.k.clauses:
            name = clause.name
            if not (
                (name == "map" and clause.modifier in ("tofrom", ""))
                or name in ("copy", "pcopy", "present_or_copy")
            ):
                continue
            items = [(it, _item_name(it)) for it in clause.items]
            read_only = [it for it, nm in items if nm and nm in used and nm not in written]
            if not read_only:
                continue
            rest = [it for it, _nm in items if it not in read_only]
            span = _clause_span(pragma, clause.text)
            names = ", ".join(f"`{_item_name(it)}`" for it in read_only)
            shown = f"{name}(tofrom:)" if name == "map" else f"{name}()"
            better = "map(to:)" if name == "map" else "copyin()"
            msg = (
                f"{names} {'is' if len(read_only) == 1 else 'are'} only read in this region "
                f"but {shown} also copies {'it' if len(read_only) == 1 else 'them'} back to the "
                f"host: use {better} and save the device-to-host transfer."
            )
            fix = None
            if span is not None:
                ro = ", ".join(read_only)
                new = f"map(to: {ro})" if name == "map" else f"copyin({ro})"
                if rest:
                    mod = f"{clause.modifier}: " if clause.modifier else ""
                    keep = f"{name}({mod}{', '.join(rest)})"
                    new = f"{keep} {new}"
                fix = Fix(
                    f"Use {better} for {', '.join(_item_name(it) for it in read_only)}",
                    (TextEdit(base + span[0], base + span[1], new),),
                )
                where = (base + span[0], base + span[1])
            else:
                where = self._pragma_line()
            copies = (
                "one device-to-host copy"
                if len(read_only) == 1
                else (f"{len(read_only)} device-to-host copies")
            )
            gain = unmodelled(
                self.gpu,
                f"{copies} fewer per run of the region (host-link transfers, outside the "
                "kernel's roofline)",
            )
            self.add("RL011", where, msg, "information", fix, gain=gain)

    def _pragma_line(self) -> tuple[int, int]:
        s = self.k.name_span.start_byte
        e = self.source.find(b"\n", s, self.k.name_span.end_byte)
        return s, (self.k.name_span.end_byte if e < 0 else e)

    # RL012 ---------------------------------------------------------------------------------
    def map_in_loop(self) -> None:
        moving = [
            c
            for c in self.k.clauses
            if (c.name == "map" and c.modifier not in ("alloc", "release", "delete"))
            or c.name in ("copy", "copyin", "copyout", "pcopy", "pcopyin", "pcopyout")
        ]
        if not moving or self.k.node is None:
            return
        loop = None
        fn: Node | None = None
        for p in parents(self.k.node):
            if p.type == "function_definition":
                fn = p
                break
            if p.type in LOOPS:
                loop = p
                break
        where = "host loop at line {0}"
        source = self.source
        if loop is None and fn is not None:
            # no line number: the caller is outside the kernel's context key (cached advice)
            loop, caller = _calling_loop(_root(fn), self.k.name, fn)
            where = f"loop in `{caller}` that calls `{self.k.name}`"
            if loop is None:  # a caller in another file of the program (the folder)
                loop, caller, source, other = _calling_loop_elsewhere(
                    self.detection.file, self.k.name
                )
                where = f"loop in `{caller}` ({other}) that calls `{self.k.name}`"
        if loop is None or _data_region_around(loop, source):
            return
        var = _loop_counter(loop)
        if var is not None and all(var in _clause_names(c.text) for c in moving):
            return  # each iteration maps a different part (chunks streamed once)
        data = "target data" if self.k.language == "omp" else "data"
        clauses = " ".join(c.text for c in moving).replace("{", "{{").replace("}", "}}")
        self.add(
            "RL012",
            self._pragma_line(),
            f"the data of this region ({clauses}) is transferred on every iteration of the "
            f"{where}: host-device transfers are far "
            f"slower than DRAM {self.on()}. Map it once around the loop "
            f"(`#pragma {self.k.language} {data} ...`) and use `present`/`update` inside.",
            lines=(loop.start_point.row + 1,) if "{0}" in where else (),
            gain=unmodelled(
                self.gpu,
                "the data transferred once instead of on every iteration (host-link "
                "transfers, outside the kernel's roofline)",
            ),
        )


def _loop_counter(loop: Node) -> str | None:
    init = loop.child_by_field_name("initializer")
    if init is None:
        return None
    for n in walk(init):
        if n.type in ("init_declarator", "assignment_expression"):
            left = n.child_by_field_name("declarator") or n.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                return text(left)
    return None


def _clause_names(clause_text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", clause_text))


def _root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


def _calling_loop(root: Node, name: str, fn: Node | None = None) -> tuple[Node | None, str]:
    """A loop of a function under ``root`` (other than ``fn``, the function holding the
    region) that calls ``name`` on every iteration, and that function's name."""
    for n in walk(root):
        if n.type != "call_expression" or call_name(n) != name:
            continue
        for p in parents(n):
            if p.type == "function_definition" or p == fn:
                break
            if p.type in LOOPS:
                caller = next((q for q in parents(p) if q.type == "function_definition"), None)
                decl = function_declarator(caller) if caller is not None else None
                named = decl.child_by_field_name("declarator") if decl is not None else None
                return p, text(named) if named is not None else "?"
    return None, ""


def _calling_loop_elsewhere(path: str, name: str) -> tuple[Node | None, str, bytes, str]:
    """A loop calling ``name`` in another source file of ``path``'s folder (the program's
    other files, read from disk as ``detect.program`` lists them): the loop, its function,
    that file's bytes and base name."""
    if not path:
        return None, "", b"", ""
    pattern = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*\(")
    for unit in units_mentioning(path, pattern):
        loop, caller = _calling_loop(unit.root, name)
        if loop is not None:
            return loop, caller, unit.detection.source, os.path.basename(unit.path)
    return None, "", b"", ""


def _item_name(item: str) -> str:
    m = re.match(r"\s*([A-Za-z_]\w*)", item)
    return m.group(1) if m else ""


def _clause_span(pragma: bytes, clause_text: str) -> tuple[int, int] | None:
    """Byte span of ``clause_text`` (``name(args)``) in the pragma's raw bytes."""
    name, _, rest = clause_text.partition("(")
    args = rest[:-1] if rest.endswith(")") else rest
    pattern = re.compile(
        rb"\b"
        + re.escape(name.encode())
        + rb"\s*\(\s*"
        + re.escape(args.strip().encode())
        + rb"\s*\)"
    )
    m = pattern.search(pragma)
    return (m.start(), m.end()) if m else None


_DATA_PRAGMA = re.compile(rb"#\s*pragma\s+(?:omp\s+target\s+data|acc\s+data)\b")
_ENTER_PRAGMA = re.compile(rb"#\s*pragma\s+(?:omp\s+target\s+enter\s+data|acc\s+enter\s+data)\b")


def _data_region_around(loop: Node, source: bytes) -> bool:
    """A structured data region around ``loop`` (``#pragma omp target data`` / ``acc data``
    right before one of its enclosing statements), or an ``enter data`` earlier in the
    function."""
    node: Node | None = loop
    while node is not None and node.type != "function_definition":
        sib = node.prev_named_sibling
        while sib is not None and sib.type == "comment":
            sib = sib.prev_named_sibling
        if sib is not None and sib.type == "preproc_call" and _DATA_PRAGMA.match(sib.text or b""):
            return True
        node = node.parent
    start = node.start_byte if node is not None else 0
    return _ENTER_PRAGMA.search(source, start, loop.start_byte) is not None
