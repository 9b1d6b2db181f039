"""The editor refines source-level verdicts with nvcc's PTX counts in the background
(issue: compiler-assisted counts), through pytest-lsp's real client over stdio."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
from lsp_session import (
    RecordingClient,
    change,
    diagnostics_for,
    hover_text,
    initialize,
    open_text,
    position_of,
)
from lsprotocol import types as lsp

from roofline_lsp.compiler.toolchain import find_nvcc, find_offload_clang

PTX_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ptx"
needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="no nvcc on this machine")
needs_omp_clang = pytest.mark.skipif(
    find_nvcc() is None or find_offload_clang() is None,
    reason="no clang with the OpenMP NVPTX runtime (and nvcc's libdevice) on this machine",
)


async def hover_at(client: RecordingClient, uri: str, pos: lsp.Position) -> str:
    h = await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=pos)
    )
    return hover_text(h)


async def wait_for_hover(
    client: RecordingClient, uri: str, pos: lsp.Position, needle: str, timeout: float = 60
) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = await hover_at(client, uri, pos)
        if needle in text or time.monotonic() > deadline:
            return text
        await asyncio.sleep(0.1)


async def open_copy(
    client: RecordingClient, tmp_path: Path, name: str, **settings: str
) -> tuple[str, str]:
    """Initialize for the RTX 3080, open a copy of a PTX fixture, wait for its diagnostics."""
    await initialize(client, {"gpu": "rtx3080", **settings})
    path = tmp_path / name
    shutil.copy(PTX_FIXTURES / name, path)
    uri, text = path.as_uri(), path.read_text("utf-8")
    open_text(client, uri, text)
    await diagnostics_for(client, uri, 1)
    return uri, text


async def wait_for_log(client: RecordingClient, needle: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not any(needle in m.message for m in client.log_messages):
        assert time.monotonic() < deadline, [m.message for m in client.log_messages]
        await asyncio.sleep(0.1)


@needs_nvcc
async def test_source_verdict_first_then_ptx_counts_and_again_after_an_edit(
    client: RecordingClient, tmp_path: Path
):
    uri, text = await open_copy(client, tmp_path, "int_hash.cu")
    name = position_of(text, "hash_keys")
    card = await wait_for_hover(client, uri, name, "counts: PTX")
    assert "counts: PTX" in card, card
    assert client.refreshes["inlayHint"] >= 1  # the refined verdict reaches the hints too

    # an edit: the edited kernel's verdict is from source counts at once, PTX follows
    line = position_of(text, "out[i] = h % 1024u;").line
    since = len(client.published)
    change(client, uri, 2, (line, 0), (line, 0), "        h ^= h >> 7;\n")
    await diagnostics_for(client, uri, 2, since=since)
    assert "counts: PTX" not in await hover_at(client, uri, name)
    card = await wait_for_hover(client, uri, name, "counts: PTX")
    assert "counts: PTX" in card, card


@needs_nvcc
async def test_a_file_that_does_not_compile_keeps_source_counts_and_says_why(
    client: RecordingClient, tmp_path: Path
):
    uri, text = await open_copy(client, tmp_path, "broken.cu")
    await wait_for_log(client, "source counts for broken.cu")
    kernel = next(ln for ln in text.splitlines() if "__global__" in ln)
    name = kernel.split("void", 1)[1].split("(")[0].strip()
    assert "counts: PTX" not in await hover_at(client, uri, position_of(text, name))


async def test_without_nvcc_the_editor_keeps_source_counts_and_says_why(
    client: RecordingClient, tmp_path: Path
):
    uri, text = await open_copy(client, tmp_path, "saxpy.cu", nvcc=str(tmp_path / "no-nvcc"))
    await wait_for_log(client, "source counts for saxpy.cu")
    assert any("nvcc" in m.message for m in client.log_messages)
    assert "counts: PTX" not in await hover_at(client, uri, position_of(text, "saxpy"))


@needs_omp_clang
async def test_an_openmp_region_takes_its_flops_from_clangs_ptx(
    client: RecordingClient, tmp_path: Path
):
    # counts=auto (the default): the region is compiled by clang in the background and its
    # verdict re-estimated with the PTX FLOPs; the integer ops stay the source counter's
    uri, text = await open_copy(client, tmp_path, "omp_saxpy.c")
    region = position_of(text, "omp target")
    card = await wait_for_hover(client, uri, region, "counts: PTX FLOPs")
    assert "(counts: PTX FLOPs)" in card, card
