"""lsp/code_actions.py against the engine, without a client."""

from __future__ import annotations

import pytest
from lsp_helpers import doc_id, open_analysed, position_of
from lsprotocol import types as lsp

from roofline_lsp.engine.documents import Change
from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.lsp.code_actions import kernel_actions
from roofline_lsp.lsp.commands import CMD_EXPLAIN, CMD_SELECT_GPU


def _params(uri: str, rng: lsp.Range, only: list[str] | None = None) -> lsp.CodeActionParams:
    return lsp.CodeActionParams(
        text_document=doc_id(uri),
        range=rng,
        context=lsp.CodeActionContext(diagnostics=[], only=only),
    )


def _at(text: str, needle: str) -> lsp.Range:
    start = position_of(text, needle)
    return lsp.Range(start, lsp.Position(start.line, start.character + len(needle)))


@pytest.mark.parametrize("document_changes", [False, True])
def test_fp64_literal_fix(document_changes: bool) -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    actions = kernel_actions(ws, _params(uri, _at(text, "0.5)")), "utf-16", document_changes)
    fixes = [a for a in actions if a.kind == lsp.CodeActionKind.QuickFix]
    assert fixes and fixes[0].is_preferred
    fix = fixes[0]
    assert fix.diagnostics and fix.diagnostics[0].code == "RL001"
    assert fix.edit is not None
    if document_changes:
        assert fix.edit.changes is None and fix.edit.document_changes
        dc = fix.edit.document_changes[0]
        assert isinstance(dc, lsp.TextDocumentEdit) and dc.text_document.version == 1
        edits = dc.edits
    else:
        assert fix.edit.changes is not None
        edits = fix.edit.changes[uri]
    assert any(isinstance(e, lsp.TextEdit) and "f" in e.new_text for e in edits)
    # on a kernel, without "only": select GPU and explain follow the fixes
    cmds = [a.command.command for a in actions if a.command is not None]
    assert cmds == [CMD_SELECT_GPU, CMD_EXPLAIN]


def test_only_quickfix_leaves_out_the_commands() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    params = _params(uri, _at(text, "0.5)"), [lsp.CodeActionKind.QuickFix])
    actions = kernel_actions(ws, params, "utf-16")
    assert actions and all(a.kind == lsp.CodeActionKind.QuickFix for a in actions)


def test_a_fix_whose_text_changed_is_dropped() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    rng = _at(text, "0.5)")
    doc = ws.documents[uri]
    s, e = (rng.start.line, rng.start.character), (rng.end.line, rng.end.character - 1)
    doc.apply([Change("0.25", (s, e))], 2)  # the literal the fix rewrites is gone
    actions = kernel_actions(ws, _params(uri, rng), "utf-16")
    assert not [
        a for a in actions if a.kind == lsp.CodeActionKind.QuickFix and "0.5" in (a.title or "")
    ]
    assert all(
        a.diagnostics is None for a in actions if a.kind == lsp.CodeActionKind.QuickFix
    )  # diagnostics only when the analysis is of the current text


def test_offload_data_clause_fix() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "offload.cpp", language="cpp")
    actions = kernel_actions(
        ws, _params(uri, _at(text, "map(tofrom: in[0:n], out[0:n])")), "utf-16"
    )
    fixes = [a for a in actions if a.kind == lsp.CodeActionKind.QuickFix]
    assert any(f.diagnostics and f.diagnostics[0].code == "RL011" for f in fixes)


def test_no_actions_without_an_analysis() -> None:
    ws = Workspace()
    assert kernel_actions(ws, _params("file:///nope.cu", _at("x", "x")), "utf-16") == []


ROWS = (
    "__global__ void spmv(const int *row, const int *col, const float *v, const float *x,\n"
    "                     float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  float s = 0.0f;\n"
    "  for (int j = row[i]; j < row[i + 1]; j++) {\n"
    "    float w = v[j];\n"
    "    while (w > 1.0f) w *= 0.5f;\n"
    "    s += w * x[col[j]];\n"
    "  }\n"
    "  y[i] = s;\n"
    "}\n"
    "void run(const int *r, const int *c, const float *v, const float *x, float *y) {\n"
    "  spmv<<<4096, 256>>>(r, c, v, x, y);\n"
    "}\n"
)


def test_an_assumed_trip_count_can_be_written_down_above_its_loop() -> None:
    # the row loop (line 5, bound read from memory: 16 trips) and the while loop nested in it
    # (line 7, no counted bound: 16 / 4 = 4) are assumed: each action writes its assumed
    # count above its loop, indented like it, for the user to correct
    ws = Workspace()
    uri, text = open_analysed(ws, "rows.cu", ROWS)
    actions = kernel_actions(ws, _params(uri, _at(text, "spmv(")), "utf-16")
    rewrites = [a for a in actions if a.kind == lsp.CodeActionKind.RefactorRewrite]
    assert [a.title for a in rewrites] == [
        "Roofline: state the trips of the loop on line 5 (assumed 16)",
        "Roofline: state the trips of the loop on line 7 (assumed 4)",
    ]
    edits = [a.edit.changes[uri][0] for a in rewrites if a.edit and a.edit.changes]
    assert [(e.range.start.line, e.range.start.character, e.new_text) for e in edits] == [
        (4, 0, "  // roofline: trips=16\n"),
        (6, 0, "    // roofline: trips=4\n"),
    ]
    # applied (and corrected), the loop's count is the hint's: only the while loop is left,
    # no longer inside an unknown loop, so its default is not damped (16)
    lines = text.split("\n")
    edited = "\n".join([*lines[:4], "  // roofline: trips=8", *lines[4:]])
    ws = Workspace()
    uri, _ = open_analysed(ws, "rows.cu", edited)
    actions = kernel_actions(ws, _params(uri, _at(edited, "spmv(")), "utf-16")
    titles = [a.title for a in actions if a.kind == lsp.CodeActionKind.RefactorRewrite]
    assert titles == ["Roofline: state the trips of the loop on line 8 (assumed 16)"]
    # asked for quick fixes only, none of them
    only = _params(uri, _at(edited, "spmv("), [lsp.CodeActionKind.QuickFix])
    assert not [a for a in kernel_actions(ws, only, "utf-16") if a.kind != "quickfix"]
