"""`roofline-lsp serve --tcp HOST:PORT`: the same server over a TCP socket on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys

from lsp_session import FIXTURES, hover_text, make_client, position_of
from lsprotocol import types as lsp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_serve_over_tcp() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "roofline_lsp", "serve", "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    client = make_client()
    try:
        # The first connection is the session (a probe connection would end the server).
        for _ in range(400):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.05)
        await client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
        text = (FIXTURES / "kernels.cu").read_text(encoding="utf-8")
        uri = (FIXTURES / "kernels.cu").as_uri()
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "cuda-cpp", 1, text))
        )
        card = ""
        for _ in range(100):
            h = await client.text_document_hover_async(
                lsp.HoverParams(lsp.TextDocumentIdentifier(uri), position_of(text, "scale_add("))
            )
            if h is not None:
                card = hover_text(h)
                break
            await asyncio.sleep(0.05)
        assert "`scale_add`" in card
        await client.shutdown_session()
    finally:
        await client.stop()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_serve_rejects_a_bad_tcp_address() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "roofline_lsp", "serve", "--tcp", "nonsense"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "HOST:PORT" in proc.stderr and "Traceback" not in proc.stderr
