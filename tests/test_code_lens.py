"""lsp/code_lens.py against the engine, without a client."""

from __future__ import annotations

from lsp_helpers import doc_id, open_analysed, position_of
from lsprotocol import types as lsp

from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.lsp.code_lens import kernel_lenses
from roofline_lsp.lsp.commands import CMD_EXPLAIN, CMD_SELECT_GPU


def test_two_lenses_per_kernel_on_its_first_line() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    lenses = kernel_lenses(ws, lsp.CodeLensParams(doc_id(uri)), "utf-16")
    assert len(lenses) == 4
    commands = [lens.command for lens in lenses]
    assert all(c is not None for c in commands)
    select = [c for c in commands if c is not None and c.command == CMD_SELECT_GPU]
    explain = [c for c in commands if c is not None and c.command == CMD_EXPLAIN]
    assert len(select) == 2 and len(explain) == 2
    assert any("bandwidth-bound on H100" in c.title for c in select)
    assert all(c.title == "explain" for c in explain)
    assert explain[0].arguments is not None and explain[0].arguments[0] == uri
    line = explain[0].arguments[1]
    assert lenses[0].range == lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0))
    assert line <= position_of(text, "scale_add(").line


def test_no_lenses_without_kernels() -> None:
    ws = Workspace()
    uri, _ = open_analysed(ws, "no_kernels.cpp", language="cpp")
    assert kernel_lenses(ws, lsp.CodeLensParams(doc_id(uri)), "utf-16") == []
