"""The language server: hover, inlay hints, code lens, diagnostics with advice, code actions.

The protocol layer only. :class:`~roofline_lsp.lsp.language_server.RooflineServer` owns the
engine (a :class:`~roofline_lsp.engine.workspace.Workspace` and its
:class:`~roofline_lsp.engine.scheduler.Scheduler`); each request kind has its module of thin
handlers (``sync``, ``settings``, ``hover``, ``inlay_hints``, ``code_lens``,
``code_actions``, ``commands``) that read the last analysis and convert positions with
``ranges``. Analysis of a changed document is debounced (``debounceMs``) and runs in a
worker thread on a snapshot; hover, inlay hints and code lenses answer from the last
analysis, its byte offsets mapped through the edits made since. LLM verdicts (backend
``llm``/``auto``) are background tasks per (document, kernel, GPU) that replace the static
verdict when they answer.

``roofline-lsp serve`` calls :func:`main_serve`; ``python -m roofline_lsp serve`` works too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Sequence

from lsprotocol import types as lsp

from roofline_lsp.lsp import (
    chart_command,
    code_actions,
    code_lens,
    commands,
    hover,
    inlay_hints,
    settings,
    sync,
)
from roofline_lsp.lsp.language_server import RooflineServer, guard


@guard(lambda: None)
async def shutdown(ls: RooflineServer, params: None) -> None:
    """Cancel all background work and close the LLM connections."""
    ls.shut_down = True
    await ls.scheduler.shutdown()


def exit_now(ls: RooflineServer, params: None) -> None:
    """``exit``: end the process at once (0 after ``shutdown``, else 1, as the protocol says).

    Background work was cancelled by ``shutdown``; what is left (an analysis thread, the
    thread reading stdin, interpreter teardown) would keep the process 0.2-0.4 s longer,
    past the 0.1 s that Emacs's jsonrpc waits before killing it."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    logging.shutdown()
    os._exit(0 if ls.shut_down else 1)


def create_server() -> RooflineServer:
    """The server with every feature and command registered."""
    server = RooflineServer()
    server.feature(lsp.INITIALIZE)(settings.initialize)
    server.feature(lsp.INITIALIZED)(settings.initialized)
    server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)(settings.did_change_configuration)
    server.feature(lsp.SHUTDOWN)(shutdown)
    server.feature(lsp.EXIT)(exit_now)
    server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)(sync.did_open)
    server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)(sync.did_change)
    server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)(sync.did_close)
    server.feature(lsp.TEXT_DOCUMENT_HOVER)(hover.hover)
    server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT, lsp.InlayHintOptions(resolve_provider=False))(
        inlay_hints.inlay_hints
    )
    server.feature(lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensOptions(resolve_provider=False))(
        code_lens.code_lens
    )
    server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )(code_actions.code_action)
    server.command(commands.CMD_LIST_GPUS)(commands.list_gpus)
    server.command(commands.CMD_SELECT_GPU)(commands.select_gpu)
    server.command(commands.CMD_REANALYZE)(commands.reanalyze)
    server.command(commands.CMD_REPORT)(commands.report)
    server.command(commands.CMD_EXPLAIN)(commands.explain)
    server.command(chart_command.CMD_CHART)(chart_command.chart)
    return server


def main_serve(tcp: str | None = None) -> int:
    """Run the server on stdio, or on ``HOST:PORT`` with ``tcp``; returns the exit code."""
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="roofline-lsp %(levelname)s %(name)s: %(message)s",
    )
    # ROOFLINE_LOG_LEVEL=INFO logs each analysis (pygls' own logs stay at WARNING: at INFO
    # it would log every message body, whole documents included)
    level = os.environ.get("ROOFLINE_LOG_LEVEL", "WARNING").upper()
    known = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    logging.getLogger("roofline_lsp").setLevel(level if level in known else "WARNING")
    # A short switch interval keeps request handling responsive while the analysis thread runs.
    sys.setswitchinterval(0.001)
    server = create_server()
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            print(f"roofline-lsp: --tcp expects HOST:PORT, got {tcp!r}", file=sys.stderr)
            return 2
        try:
            server.start_tcp(host.strip("[]"), int(port))
        except OSError as e:
            print(f"roofline-lsp: cannot listen on {tcp}: {e.strerror or e}", file=sys.stderr)
            return 1
        return 0
    server.start_io()
    return 0


def serve(argv_options: Sequence[str] | None = None) -> int:
    """``serve [--tcp HOST:PORT]`` from a list of options (the CLI passes its own)."""
    opts = list(argv_options or [])
    tcp = None
    if "--tcp" in opts:
        i = opts.index("--tcp")
        tcp = opts[i + 1] if i + 1 < len(opts) else ""
    return main_serve(tcp)


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
