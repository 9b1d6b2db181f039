"""The `client` fixture: pytest-lsp's real client talking to `roofline-lsp serve` over stdio.

The server is started but not initialized: each test calls ``lsp_session.initialize`` with
the initializationOptions / capabilities it needs. Shut down cleanly after the test.
"""

from __future__ import annotations

import pytest_lsp
from lsp_session import SERVER_COMMAND, RecordingClient, make_client
from pytest_lsp import ClientServerConfig


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client)
)
async def client(lsp_client: RecordingClient):  # type: ignore[no-untyped-def]
    yield
    await lsp_client.shutdown_session()
