"""lsp/commands.py on a server that was never started (no client)."""

from __future__ import annotations

import pytest
from lsp_helpers import open_analysed, position_of
from pygls.exceptions import JsonRpcInvalidParams

from roofline_lsp.lsp.commands import explain, gpu_list, list_gpus, reanalyze, report, select_gpu
from roofline_lsp.lsp.language_server import RooflineServer


def test_list_gpus() -> None:
    ls = RooflineServer()
    gpus = list_gpus(ls)
    assert gpus == gpu_list(ls.ws)
    assert any(str(g["name"]).startswith("H100") for g in gpus), [g["name"] for g in gpus]


async def test_select_gpu_by_name_and_unknown() -> None:
    ls = RooflineServer()
    open_analysed(ls.ws, "kernels.cu")
    name = await select_gpu(ls, "a100")
    assert isinstance(name, str) and name.upper().startswith("A100")
    assert ls.ws.gpu_override == name
    assert ls.ws.file_config("x.cu")[1][0].name == name
    assert await select_gpu(ls, "no-such-gpu") is None
    assert ls.ws.gpu_override == name
    await ls.scheduler.shutdown()


async def test_select_gpu_without_a_name_lists_them_for_a_client_without_messages() -> None:
    ls = RooflineServer()
    assert await select_gpu(ls) == gpu_list(ls.ws)


async def test_report_and_explain() -> None:
    ls = RooflineServer()
    uri, text = open_analysed(ls.ws, "kernels.cu")
    md = await report(ls)  # the only open document
    assert md.startswith("# ") and "`scale_add`" in md and md == await report(ls, uri)
    line = position_of(text, "scale_add(").line
    text_md = await explain(ls, uri, line)
    assert "`scale_add`" in text_md and "RL001" in text_md
    assert "not in yet" not in text_md  # static backend: no LLM note


async def test_report_of_a_file_without_kernels() -> None:
    ls = RooflineServer()
    uri, _ = open_analysed(ls.ws, "no_kernels.cpp", language="cpp")
    md = await report(ls, uri)
    why = "No GPU kernel or offload region found in this file."
    assert md == f"# Roofline report: no_kernels.cpp\n\n{why}\n"


async def test_command_errors() -> None:
    ls = RooflineServer()
    with pytest.raises(JsonRpcInvalidParams, match="give the document's URI"):
        await report(ls)
    with pytest.raises(JsonRpcInvalidParams, match="expected a document URI"):
        await report(ls, 3)
    with pytest.raises(JsonRpcInvalidParams, match="is not an open document"):
        await report(ls, "file:///nope.cu")
    with pytest.raises(JsonRpcInvalidParams, match=r"expected \[uri, line\]"):
        await explain(ls, "file:///nope.cu")
    uri, _ = open_analysed(ls.ws, "kernels.cu")
    with pytest.raises(JsonRpcInvalidParams, match="no kernel at line 1"):
        await explain(ls, uri, 0)
    with pytest.raises(JsonRpcInvalidParams, match="line >= 0"):
        await explain(ls, uri, -2)


async def test_reanalyze_counts_the_open_documents() -> None:
    ls = RooflineServer()
    open_analysed(ls.ws, "kernels.cu")
    ls.scheduler.config_ready.set()
    assert await reanalyze(ls) == 1
    await ls.scheduler.shutdown()
