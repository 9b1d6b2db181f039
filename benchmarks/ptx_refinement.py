"""Editor PTX refinement time through a real LSP client over stdio (pytest-lsp's client).

Opens CUDA files in `roofline-lsp serve` (counts: auto, the default), then makes edits inside
a kernel; after each it measures the time from the keystroke (didChange) to the source-level
diagnostics and to the re-publication with the verdicts refined by nvcc's PTX counts (the
compile is new each time: the edit changes the text). Target: PTX within 3 s of the last
keystroke. Needs nvcc (CUDA_HOME, PATH or the toolkit's standard location); with clang's
OpenMP offload also examples/stencil_omp.cpp (its FLOPs from clang's PTX).

    python benchmarks/ptx_refinement.py [--edits 10] [--file PATH KERNEL]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "tests" / "e2e"))
sys.path.insert(0, str(BENCH))

from lsp_latency import HOST, KERNELS  # noqa: E402
from lsp_session import (  # noqa: E402
    SERVER_COMMAND,
    RecordingClient,
    change,
    diagnostics_for,
    hover_text,
    initialize,
    make_client,
    open_text,
    position_of,
)
from lsprotocol import types as lsp  # noqa: E402

from roofline_lsp.compiler.toolchain import find_nvcc, find_offload_clang  # noqa: E402


def generated(groups: int) -> str:
    """A complete CUDA file: ``groups`` x (5 kernels and their host launcher)."""
    parts = ["#include <cuda_runtime.h>\n#include <math.h>\n#include <stdio.h>\n\n"]
    for i in range(groups):
        parts += [k.format(i=i) + "\n" for k in KERNELS]
        parts.append(HOST.format(i=i) + "\n")
    return "".join(parts)


async def publications(client: RecordingClient, uri: str, version: int, n: int, since: int):
    """Wait until ``n`` diagnostics publications of ``version`` arrived after ``since``."""
    deadline = time.monotonic() + 60
    while sum(p.uri == uri and p.version == version for p in client.published[since:]) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no PTX refinement for version {version}")
        client.diagnostics_event.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(client.diagnostics_event.wait(), 1)


async def measure(client: RecordingClient, path: Path, text: str, kernel: str, edits: int):
    uri = path.as_uri()
    open_text(client, uri, text)
    await diagnostics_for(client, uri, 1, timeout=60)
    await publications(client, uri, 1, 2, 0)
    source_ms, ptx_ms = [], []
    # a CUDA kernel's name; an OpenMP region's pragma (``omp target``)
    anchor = position_of(text, f"{kernel}(" if f"{kernel}(" in text else kernel)
    lines = text.split("\n")
    line = next(i for i in range(anchor.line, len(lines)) if "{" in lines[i]) + 1  # in the body
    for v in range(2, edits + 2):
        since = len(client.published)
        t0 = time.perf_counter()
        change(client, uri, v, (line, 0), (line, 0), f"    // edit {v}\n")
        await publications(client, uri, v, 1, since)
        source_ms.append((time.perf_counter() - t0) * 1000)
        await publications(client, uri, v, 2, since)
        ptx_ms.append((time.perf_counter() - t0) * 1000)
        h = await client.text_document_hover_async(
            lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=anchor)
        )
        assert "counts: PTX" in hover_text(h), hover_text(h)
    return source_ms, ptx_ms


async def main(edits: int, extra: list[tuple[Path, str]]) -> int:
    if find_nvcc() is None:
        print("no nvcc found: nothing to measure")
        return 1
    saxpy = (BENCH.parent / "examples" / "saxpy.cu").read_text()
    big = generated(5)
    cases = [
        (f"examples/saxpy.cu ({saxpy.count(chr(10))} lines, 1 kernel)", saxpy, "saxpy"),
        (f"generated ({big.count(chr(10))} lines, 25 kernels)", big, "saxpy_4"),
    ]
    files = list(extra)
    if find_offload_clang() is not None:
        files.insert(0, (BENCH.parent / "examples" / "stencil_omp.cpp", "omp target"))
    for path, kernel in files:
        text = path.read_text("utf-8", "replace")
        cases.append((f"{path.name} ({text.count(chr(10))} lines)", text, kernel))
    client = make_client()
    await client.start_io(*SERVER_COMMAND)
    try:
        await initialize(client, {"gpu": "rtx3080"})
        with tempfile.TemporaryDirectory() as tmp:
            for i, (label, text, kernel) in enumerate(cases):
                # beside the original for its local includes, else in a temporary folder
                orig = files[i - 2][0] if i >= 2 else None
                folder = orig.parent if orig is not None else Path(tmp)
                path = folder / f".roofline-bench-{i}{orig.suffix if orig is not None else '.cu'}"
                path.write_text(text)
                try:
                    src, refined = await measure(client, path, text, kernel, edits)
                finally:
                    path.unlink()
                print(
                    f"{label}: edit -> source diagnostics p50 {statistics.median(src):.0f} ms; "
                    f"-> PTX-refined p50 {statistics.median(refined):.0f} ms, "
                    f"max {max(refined):.0f} ms ({edits} edits; target < 3000 ms)"
                )
    finally:
        await client.shutdown_session()
        await client.stop()
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument(
        "--file",
        nargs=2,
        action="append",
        default=[],
        metavar=("PATH", "KERNEL"),
        help="also measure this file, editing inside KERNEL (a CUDA kernel's name, or the "
        "text of an OpenMP region's pragma such as 'omp target')",
    )
    ns = ap.parse_args()
    sys.exit(asyncio.run(main(ns.edits, [(Path(p).resolve(), k) for p, k in ns.file])))
