"""workspace/executeCommand ``roofline.chart``: the roofline chart of the workspace or of
one document, as the page ``roofline-lsp report --html`` writes (``present/roofline_chart``).

Arguments (all optional): a document URI (that file only; otherwise every source file under
the workspace folders), then an options object ``{"out": PATH}`` to also write the page to a
file, for editors that open it in a browser. Answers ``{"html", "path", "kernels", "gpus"}``.
Open documents are charted from their current buffers (their last analysis, made now if it
is stale); the other files through ``check``'s run (worker processes, results cache) in a
thread, so the server keeps answering. The page carries the analysed paths so that a
webview can open a kernel when its point is clicked.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import replace
from typing import Any

from pygls.uris import from_fs_path, to_fs_path

from roofline_lsp.engine.file_run import check_files, default_jobs
from roofline_lsp.engine.files import InputError, collect_files
from roofline_lsp.lsp.language_server import RooflineServer
from roofline_lsp.present.json_output import kernel_json
from roofline_lsp.present.roofline_chart import build_chart, chart_html

CMD_CHART = "roofline.chart"


def _roots(ls: RooflineServer) -> list[str]:
    """The workspace folders (none before the client initialized the server)."""
    try:
        workspace = ls.workspace
    except RuntimeError:
        return []
    roots = [to_fs_path(f.uri) for f in workspace.folders.values()]
    if not roots and workspace.root_path:
        roots = [workspace.root_path]
    return [r for r in roots if r and os.path.isdir(r)]


def _shown(path: str, roots: list[str]) -> str:
    for r in roots:
        if os.path.commonpath([os.path.abspath(path), os.path.abspath(r)]) == os.path.abspath(r):
            return os.path.relpath(path, r)
    return os.path.basename(path)


async def chart(ls: RooflineServer, *args: object) -> dict[str, Any]:
    """The chart of the document given as first argument, else of the workspace."""
    target = args[0] if args else None
    if target is not None and not isinstance(target, str):
        raise ValueError(f"{CMD_CHART}: expected a document URI, got {target!r}")
    options = args[1] if len(args) > 1 else {}
    if not isinstance(options, dict):
        raise ValueError(f'{CMD_CHART}: expected options {{"out": PATH}}, got {options!r}')
    out = options.get("out")
    if out is not None and not isinstance(out, str):
        raise ValueError(f"{CMD_CHART}: out must be a file path")
    roots = _roots(ls)
    kernels: list[dict[str, Any]] = []
    open_paths: dict[str, str] = {}  # path -> uri of the open documents
    for uri, doc in ls.ws.documents.items():
        if doc.path:
            open_paths[os.path.abspath(doc.path)] = uri
    if target is not None and target != "workspace":
        uris = [target]
        files: list[str] = []
        if target not in ls.ws.documents:
            path = to_fs_path(target)
            if not path or not os.path.isfile(path):
                raise ValueError(f"{CMD_CHART}: {target} is neither open nor a file")
            uris, files = [], [path]
    else:
        try:
            found, _ = collect_files(roots) if roots else ([], [])
        except InputError as e:
            raise ValueError(f"{CMD_CHART}: {e}") from None
        files = [f for f in found if os.path.abspath(f) not in open_paths]
        uris = list(ls.ws.documents)
    for uri in uris:
        a = await ls.scheduler.fresh_analysis(uri)
        if a is None or a.report is None:
            continue
        path = ls.ws.documents[uri].path if uri in ls.ws.documents else to_fs_path(uri)
        for kr in a.report.kernels:
            d = kernel_json(kr, _shown(path or uri, roots))
            d["path"] = path or uri
            kernels.append(d)
    if files:
        config = ls.ws.config
        if ls.ws.gpu_override:
            config = replace(config, gpu=ls.ws.gpu_override)
        outcomes = await asyncio.to_thread(check_files, config, files, jobs=min(default_jobs(), 4))
        for o in outcomes:
            for text in o.json:
                d = json.loads(text)
                d["path"] = o.path
                d["file"] = _shown(o.path, roots)
                kernels.append(d)
    kernels.sort(key=lambda d: (d["file"], d["line"]))
    gpus = ls.ws.file_config("")[1]
    where = _shown(to_fs_path(target) or target, roots) if target else "workspace"
    page = chart_html(build_chart(kernels, gpus, title=f"Roofline: {where}"), links=True)
    written = None
    if out:
        try:
            with open(out, "w", encoding="utf-8") as f:
                f.write(page)
        except OSError as e:
            raise ValueError(f"{CMD_CHART}: {out}: {e.strerror or e}") from None
        written = out
    return {
        "html": page,
        "path": written,
        "uri": from_fs_path(written) if written else None,
        "kernels": len(kernels),
        "gpus": [g.name for g in gpus],
    }
