"""textDocument/codeAction: the quick fixes of the advice in range, and, on a kernel, "select
target GPU", "explain" and, for each loop whose trip count the estimate assumed, an edit that
writes the assumption down as ``// roofline: trips=N`` above the loop, for the user to
correct."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types as lsp

from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.engine.documents import Document
from roofline_lsp.engine.workspace import DocumentAnalysis, Workspace, current_offset
from roofline_lsp.lsp.commands import CMD_EXPLAIN, CMD_SELECT_GPU
from roofline_lsp.lsp.diagnostics import diagnostic
from roofline_lsp.lsp.language_server import RooflineServer, guard
from roofline_lsp.lsp.ranges import byte_range, lsp_position, lsp_range
from roofline_lsp.model.numbers import fmt_count
from roofline_lsp.model.terms import TRIPS_HINT, AssumptionTerm
from roofline_lsp.syntax.positions import Encoding


def kernel_actions(
    ws: Workspace, params: lsp.CodeActionParams, enc: Encoding, document_changes: bool = False
) -> list[lsp.CodeAction]:
    """The actions for ``params.range``; ``document_changes``: the client takes versioned
    document edits (else a plain ``changes`` map)."""
    found = ws.current(params.text_document.uri)
    if found is None:
        return []
    doc, a = found
    lo, hi = byte_range(doc, params.range, enc)
    only = params.context.only
    out: list[lsp.CodeAction] = []
    if not only or lsp.CodeActionKind.QuickFix in only:
        for adv in a.advice:
            if adv.fix is None:
                continue
            s, e = current_offset(doc, a, adv.start), current_offset(doc, a, adv.end)
            if e < lo or s > hi:
                continue
            edits = fix_edits(doc, a, adv, enc)
            if edits is None:
                continue
            out.append(
                lsp.CodeAction(
                    title=adv.fix.title,
                    kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic(a, adv, enc)] if a.seq == doc.seq else None,
                    is_preferred=True,
                    edit=workspace_edit(doc, edits, document_changes),
                )
            )
    hit = ws.place_at(doc, a, lo)
    if not only and hit is not None:
        line = lsp_position(doc.lines, current_offset(doc, a, hit[0].start), enc).line
        out.append(
            lsp.CodeAction(
                title="Roofline: select target GPU",
                command=lsp.Command(title="Select target GPU", command=CMD_SELECT_GPU),
            )
        )
        out.append(
            lsp.CodeAction(
                title=f"Roofline: explain {hit[0].kr.kernel.name}",
                command=lsp.Command(
                    title="Explain this kernel", command=CMD_EXPLAIN, arguments=[doc.uri, line]
                ),
            )
        )
    rewrite = lsp.CodeActionKind.RefactorRewrite
    if hit is not None and (not only or rewrite in only or lsp.CodeActionKind.Refactor in only):
        for t in hit[0].kr.verdict.terms:
            if isinstance(t, AssumptionTerm) and t.kind == "trips" and t.line:
                edit = _trips_edit(doc, a, t, enc)
                if edit is not None:
                    out.append(
                        lsp.CodeAction(
                            title=f"Roofline: state the trips of the loop on line {t.line}"
                            f" (assumed {fmt_count(t.value)})",
                            kind=rewrite,
                            edit=workspace_edit(doc, [edit], document_changes),
                        )
                    )
    return out


def _trips_edit(
    doc: Document, a: DocumentAnalysis, t: AssumptionTerm, enc: Encoding
) -> lsp.TextEdit | None:
    """``// roofline: trips=<assumed>`` on a line of its own above the loop of ``t`` (line in
    the analysed snapshot), indented like it; None when that line is gone."""
    if not 0 < t.line <= a.lines.line_count:
        return None
    at = current_offset(doc, a, a.lines.starts[t.line - 1])
    row = doc.lines.line_bytes(doc.lines.line_of(at))
    indent = row[: len(row) - len(row.lstrip(b" \t"))].decode("utf-8", "replace")
    pos = lsp_position(doc.lines, at, enc)
    trips = fmt_count(t.value).replace(" ", "")
    return lsp.TextEdit(
        range=lsp.Range(pos, pos), new_text=f"{indent}// roofline: {TRIPS_HINT}={trips}\n"
    )


def fix_edits(
    doc: Document, a: DocumentAnalysis, adv: Advice, enc: Encoding
) -> list[lsp.TextEdit] | None:
    """The fix's edits in current coordinates; None when the text they touch changed."""
    assert adv.fix is not None
    out = []
    for ed in adv.fix.edits:
        s, e = current_offset(doc, a, ed.start), current_offset(doc, a, ed.end)
        # the replaced bytes, and a few before them (insertions), must be unchanged
        before = a.source[max(0, ed.start - 16) : ed.start]
        if (
            s < len(before)
            or doc.source[s - len(before) : e] != before + a.source[ed.start : ed.end]
        ):
            return None
        out.append(lsp.TextEdit(range=lsp_range(doc.lines, s, e, enc), new_text=ed.new_text))
    return out


def workspace_edit(
    doc: Document, edits: Sequence[lsp.TextEdit], document_changes: bool
) -> lsp.WorkspaceEdit:
    if document_changes:
        return lsp.WorkspaceEdit(
            document_changes=[
                lsp.TextDocumentEdit(
                    text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                        uri=doc.uri, version=doc.version
                    ),
                    edits=list(edits),
                )
            ]
        )
    return lsp.WorkspaceEdit(changes={doc.uri: list(edits)})


@guard(list)
def code_action(ls: RooflineServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    return kernel_actions(
        ls.ws, params, ls.encoding, ls.capable("workspace.workspace_edit.document_changes")
    )
