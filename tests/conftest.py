"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from chat_server import ChatServer

from roofline_lsp.model.gpus import GpuProfile, load_registry


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A scriptable OpenAI-compatible chat-completions server on 127.0.0.1 (see
    ``tests/chat_server.py``); stopped after the test."""
    server = ChatServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gpu() -> GpuProfile:
    """The RTX 3080 profile (the evaluation set's GPU)."""
    return load_registry().get("rtx3080")
