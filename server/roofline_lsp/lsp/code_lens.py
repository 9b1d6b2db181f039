"""textDocument/codeLens: above each kernel, its verdicts (select the target GPU) and
"explain"."""

from __future__ import annotations

from lsprotocol import types as lsp

from roofline_lsp.engine.workspace import Workspace, current_offset
from roofline_lsp.lsp.commands import CMD_EXPLAIN, CMD_SELECT_GPU
from roofline_lsp.lsp.language_server import RooflineServer, guard
from roofline_lsp.lsp.ranges import lsp_position
from roofline_lsp.present.markdown import lens_title
from roofline_lsp.syntax.positions import Encoding


def kernel_lenses(ws: Workspace, params: lsp.CodeLensParams, enc: Encoding) -> list[lsp.CodeLens]:
    """Two lenses on the first line of each analysed kernel."""
    found = ws.current(params.text_document.uri)
    if found is None:
        return []
    doc, a = found
    out = []
    for p in a.places:
        line = lsp_position(doc.lines, current_offset(doc, a, p.start), enc).line
        rng = lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0))
        out.append(
            lsp.CodeLens(
                range=rng, command=lsp.Command(title=lens_title(p.kr), command=CMD_SELECT_GPU)
            )
        )
        out.append(
            lsp.CodeLens(
                range=rng,
                command=lsp.Command(
                    title="explain", command=CMD_EXPLAIN, arguments=[doc.uri, line]
                ),
            )
        )
    return out


@guard(list)
async def code_lens(ls: RooflineServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    # right after didOpen: answer from the first analysis rather than with nothing
    await ls.scheduler.first_analysis(params.text_document.uri)
    return kernel_lenses(ls.ws, params, ls.encoding)
