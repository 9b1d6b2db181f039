"""workspace/executeCommand: list and select GPUs, re-analyse, report, explain a kernel."""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from roofline_lsp.engine.scheduler import basename
from roofline_lsp.engine.workspace import Workspace, one_line
from roofline_lsp.lsp.language_server import RooflineServer, guard
from roofline_lsp.model.gpus import UnknownGpuError, gpu_json
from roofline_lsp.present.markdown import explain_markdown, file_report_markdown

CMD_LIST_GPUS = "roofline.listGpus"
CMD_SELECT_GPU = "roofline.selectGpu"
CMD_REANALYZE = "roofline.reanalyze"
CMD_REPORT = "roofline.report"
CMD_EXPLAIN = "roofline.explainKernel"
COMMANDS = (CMD_LIST_GPUS, CMD_SELECT_GPU, CMD_REANALYZE, CMD_REPORT, CMD_EXPLAIN)

GpuJson = dict[str, object]


def gpu_list(ws: Workspace) -> list[GpuJson]:
    """Every known GPU profile, as JSON."""
    return [gpu_json(p) for p in ws.registry().all()]


@guard(list)
def list_gpus(ls: RooflineServer, *args: object) -> list[GpuJson]:
    return gpu_list(ls.ws)


@guard(lambda: None)
async def select_gpu(ls: RooflineServer, *args: object) -> str | list[GpuJson] | None:
    """Make the GPU named by the argument (else the one the user picks) the target."""
    reg = ls.ws.registry()
    name = args[0] if args and isinstance(args[0], str) and args[0].strip() else None
    if name is None:
        if not ls.capable("window.show_message"):
            return gpu_list(ls.ws)
        current = ls.ws.file_config("")[1][0].name
        choice = await ls.window_show_message_request_async(
            lsp.ShowMessageRequestParams(
                type=lsp.MessageType.Info,
                message=f"roofline: target GPU (now {current})",
                actions=[lsp.MessageActionItem(title=p.name) for p in reg.all()],
            )
        )
        if choice is None:
            return None
        name = choice.title
    try:
        gpu = reg.get(name)
    except UnknownGpuError as e:
        ls.message(f"roofline: {one_line(e)}")
        return None
    ls.ws.gpu_override = gpu.name
    ls.scheduler.reanalyse_all(f"roofline: re-analysing for {gpu.name}")
    return gpu.name


@guard(lambda: 0)
async def reanalyze(ls: RooflineServer, *args: object) -> int:
    uris = list(ls.ws.documents)
    await ls.scheduler.reanalyse(uris, "roofline: re-analysing open files")
    return len(uris)


async def report(ls: RooflineServer, *args: object) -> str:
    """The Markdown report of a document (the only open one without an argument)."""
    if args and not isinstance(args[0], str):
        raise JsonRpcInvalidParams(f"roofline.report: expected a document URI, got {args[0]!r}")
    uri = args[0] if args else None
    if uri is None:
        if len(ls.ws.documents) != 1:
            raise JsonRpcInvalidParams("roofline.report: give the document's URI")
        uri = next(iter(ls.ws.documents))
    assert isinstance(uri, str)
    a = await ls.scheduler.fresh_analysis(uri)
    if a is None:
        raise JsonRpcInvalidParams(f"roofline.report: {uri} is not an open document")
    if a.report is None:
        title = basename(ls.ws.documents[uri].path)
        why = a.declined or "no GPU kernel or offload region found in this file"
        return f"# Roofline report: {title}\n\n{why[0].upper()}{why[1:]}.\n"
    doc = ls.ws.documents[uri]
    return file_report_markdown(a.report, a.advice, basename(doc.path))


async def explain(ls: RooflineServer, *args: object) -> str:
    """The explanation of the kernel at ``[uri, line]`` (also shown as a message)."""
    if (
        len(args) < 2
        or not isinstance(args[0], str)
        or not isinstance(args[1], int)
        or isinstance(args[1], bool)
        or args[1] < 0
    ):
        raise JsonRpcInvalidParams(
            "roofline.explainKernel: expected [uri, line] with a 0-based line >= 0"
        )
    uri, line = args[0], args[1]
    a = await ls.scheduler.fresh_analysis(uri)
    doc = ls.ws.documents.get(uri)
    if a is None or a.report is None or doc is None:
        raise JsonRpcInvalidParams(f"roofline.explainKernel: {uri} has no analysed kernel")
    offset = doc.lines.offset_at(line, 0)
    hit = ls.ws.place_at(doc, a, offset)
    if hit is None:  # the line of the lens is just above the kernel's first line
        end = doc.lines.offset_at(line + 1, 0)
        hit = ls.ws.place_at(doc, a, end)
    if hit is None:
        raise JsonRpcInvalidParams(f"roofline.explainKernel: no kernel at line {line + 1}")
    kr = hit[0].kr
    v = kr.verdict
    note = ""
    if v.source == "llm":
        note = "The verdict above is the LLM's; its rationale is the explanation shown."
    elif ls.ws.config.backend != "static":
        note = "The LLM's answer is not in yet: this is the static estimate."
    text = explain_markdown(kr, a.advice, note)
    ls.message(text, lsp.MessageType.Info)
    return text
