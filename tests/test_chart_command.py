"""lsp/chart_command.py (``roofline.chart``) on a server that was never started (no client):
one document from its buffer, the workspace (open buffers first, other files from disk), the
file written for other editors, and bad arguments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lsp_helpers import FIXTURES, open_analysed
from pygls.workspace import Workspace as PyglsWorkspace

from roofline_lsp.lsp.chart_command import chart
from roofline_lsp.lsp.language_server import RooflineServer


def data_of(page: str) -> dict[str, object]:
    m = re.search(r'<script type="application/json" id="chart-data">(.*?)</script>', page)
    assert m is not None
    out: dict[str, object] = json.loads(m.group(1).replace("<\\/", "</"))
    return out


async def test_chart_of_one_open_document_uses_its_buffer() -> None:
    ls = RooflineServer()
    text = (FIXTURES / "kernels.cu").read_text().replace("scale_add", "renamed_in_buffer")
    uri, _ = open_analysed(ls.ws, "kernels.cu", text=text)
    answer = await chart(ls, uri)
    assert answer["path"] is None and answer["gpus"] == ["H100-SXM5-80GB"]
    data = data_of(answer["html"])
    names = [k["n"] for k in data["kernels"]]  # type: ignore[attr-defined]
    assert "renamed_in_buffer" in names and "scale_add" not in names
    assert answer["kernels"] == len(names)
    # each kernel carries the path the webview opens
    first = data["kernels"][0]  # type: ignore[index]
    assert first["p"] == str(FIXTURES / "kernels.cu") and first["line"] >= 1
    await ls.scheduler.shutdown()


async def test_chart_of_the_workspace_and_written_file(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.cu").write_text(
        "__global__ void on_disk(float* x) { x[threadIdx.x] = x[threadIdx.x] * 2.0f; }\n"
    )
    (root / "b.cu").write_text("__global__ void stale(float* x) { x[0] = 1.0f; }\n")
    ls = RooflineServer()
    ls.protocol._workspace = PyglsWorkspace(root.as_uri())
    # b.cu is open with other text: the chart shows the buffer, not the disk
    doc = ls.ws.open_document(
        (root / "b.cu").as_uri(), "__global__ void fresh(double* y) { y[0] *= 3.0; }\n", 1, "cuda"
    )
    ls.ws.install(ls.ws.analyse_snapshot(doc.snapshot()))
    out = tmp_path / "chart.html"
    answer = await chart(ls, None, {"out": str(out)})
    assert answer["path"] == str(out) and out.read_text() == answer["html"]
    data = data_of(answer["html"])
    kernels = {k["n"]: k for k in data["kernels"]}  # type: ignore[attr-defined]
    assert set(kernels) == {"on_disk", "fresh"}
    assert kernels["on_disk"]["f"] == "a.cu:1" and kernels["on_disk"]["p"] == str(root / "a.cu")
    await ls.scheduler.shutdown()


async def test_chart_argument_errors(tmp_path: Path) -> None:
    ls = RooflineServer()
    with pytest.raises(ValueError, match="expected a document URI"):
        await chart(ls, 3)
    with pytest.raises(ValueError, match="expected options"):
        await chart(ls, None, "x")
    with pytest.raises(ValueError, match="neither open nor a file"):
        await chart(ls, (tmp_path / "none.cu").as_uri())
    with pytest.raises(ValueError, match="chart.html"):
        await chart(ls, None, {"out": str(tmp_path / "no" / "chart.html")})
    # an empty workspace (no folders, nothing open) is an empty chart, not an error
    answer = await chart(ls)
    assert answer["kernels"] == 0 and "<svg" in answer["html"]
