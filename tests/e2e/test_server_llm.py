"""The LLM backend through the server: a fake chat-completions server on 127.0.0.1 (the real
``openai`` client talks to it), its answer flowing into hover, inlay hints and diagnostics,
and a request cancelled when the kernel's text changes."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from chat_server import ChatServer, Reply, Request, answer
from lsp_session import (
    FIXTURES,
    RecordingClient,
    change,
    diagnostics_for,
    hover_text,
    initialize,
    open_fixture,
    position_of,
)
from lsprotocol import types as lsp


def _llm_options(server: ChatServer, tmp_path: Path, backend: str = "llm") -> dict[str, object]:
    return {
        "gpu": "h100",
        "backend": backend,
        "llm": {
            "baseUrl": server.base_url,
            "model": "test-model",
            "cacheDir": str(tmp_path / "llm-cache"),
            "timeout": 20,
        },
    }


async def _hover(client: RecordingClient, uri: str, pos: lsp.Position) -> str:
    h = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=pos)
    )
    return hover_text(h) if h is not None else ""


async def _until(predicate, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.05)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached in time")


async def test_llm_answer_replaces_static_verdict_in_hover_and_diagnostics(
    client: RecordingClient, chat_server: ChatServer, tmp_path: Path
) -> None:
    uri_text = (FIXTURES / "fp64_flip.cu").read_text(encoding="utf-8")
    loop_line = position_of(uri_text, "v = v * a + b;").line + 1  # 1-based, as the model sees
    chat_server.responder = lambda req: Reply(
        content=answer(
            "compute",
            confidence=0.85,
            arithmetic_intensity=3.0,
            rationale="Scripted: the dependent fp64 FMA chain dominates.",
            suggestions=[{"line": loop_line, "message": "unroll the FMA chain"}],
        )
    )
    await initialize(client, _llm_options(chat_server, tmp_path))
    uri, text = open_fixture(client, "fp64_flip.cu")
    at = position_of(text, "horner64(")

    async def llm_verdict_shown() -> bool:
        return "compute-bound" in await _hover(client, uri, at)

    await _until(llm_verdict_shown)
    card = await _hover(client, uri, at)
    assert "LLM (test-model)" in card and "85%" in card
    assert "dependent fp64 FMA chain" in card
    assert len(chat_server.chat_requests()) == 1
    assert "horner64" in chat_server.chat_requests()[0].prompt

    async def suggestion_published() -> bool:
        diags = client.diagnostics.get(uri, [])
        return any(d.code == "RL100" for d in diags)

    await _until(suggestion_published)
    rl100 = [d for d in client.diagnostics[uri] if d.code == "RL100"]
    assert rl100[0].range.start.line == loop_line - 1
    assert "unroll the FMA chain" in rl100[0].message and "LLM" in rl100[0].message
    hints = await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=lsp.Range(lsp.Position(0, 0), lsp.Position(100, 0)),
        )
    )
    assert hints and isinstance(hints[0].label, str) and hints[0].label.startswith("compute-bound")
    # progress was reported while the request ran
    titles = [
        v.title
        for values in client.progress_reports.values()
        for v in values
        if isinstance(v, lsp.WorkDoneProgressBegin)
    ]
    assert any("LLM" in t for t in titles), titles


async def test_editing_a_kernel_cancels_its_llm_request(
    client: RecordingClient, chat_server: ChatServer, tmp_path: Path
) -> None:
    calls = itertools.count()

    def respond(req: Request) -> Reply:
        if next(calls) == 0:  # the first request hangs until the client gives up on it
            return Reply(delay=30, content=answer("bandwidth", rationale="stale"))
        return Reply(content=answer("compute", confidence=0.6, rationale="Fresh answer."))

    chat_server.responder = respond
    await initialize(client, _llm_options(chat_server, tmp_path))
    uri, text = open_fixture(client, "fp64_flip.cu")
    await diagnostics_for(client, uri, 1)
    assert await asyncio.to_thread(chat_server.wait_for_requests, 1, 10)

    at = position_of(text, "k < 24")
    change(client, uri, 2, (at.line, at.character + 4), (at.line, at.character + 6), "32")
    text = text.replace("k < 24", "k < 32")

    async def answered() -> bool:
        return "Fresh answer." in await _hover(client, uri, position_of(text, "horner64("))

    await _until(answered)
    first = chat_server.chat_requests()[0]
    for _ in range(100):
        if first.disconnected:
            break
        await asyncio.sleep(0.05)
    assert first.disconnected, "the request for the old text was not cancelled"
    assert "k < 32" in chat_server.chat_requests()[-1].prompt


async def test_auto_backend_without_key_or_local_endpoint_stays_static(
    client: RecordingClient, chat_server: ChatServer, tmp_path: Path
) -> None:
    options = _llm_options(chat_server, tmp_path, backend="auto")
    options["llm"] = {
        "baseUrl": "https://llm.invalid/v1",
        "apiKeyEnv": "NO_SUCH_KEY_VAR",
        "cacheDir": str(tmp_path / "llm-cache"),
    }
    await initialize(client, options)
    uri, text = open_fixture(client, "fp64_flip.cu")
    await diagnostics_for(client, uri, 1)
    card = await _hover(client, uri, position_of(text, "horner64("))
    assert "(static, " in card
    await asyncio.sleep(0.3)
    assert chat_server.chat_requests() == []
