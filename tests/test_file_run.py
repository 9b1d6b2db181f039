"""``check``'s run (``engine/file_run.py``): every readable file analysed in order, unreadable
ones reported in one line, each stage's progress, and no compile with source counts."""

from __future__ import annotations

from pathlib import Path

from roofline_lsp.engine.file_run import run_files
from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.model.config import Config
from roofline_lsp.model.terms import NoteTerm

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_files_are_analysed_in_order_and_problems_said_once(tmp_path: Path) -> None:
    binary = tmp_path / "blob.cu"
    binary.write_bytes(b"\x00\x01" * 100)
    files = [str(EXAMPLES / "saxpy.cu"), str(binary), str(EXAMPLES / "stencil_omp.cpp")]
    said: list[str] = []
    stages: list[tuple[str, int, int]] = []
    ws = Workspace(Config(counts="source"))
    reports = run_files(ws, files, progress=lambda *s: stages.append(s), say=said.append)
    assert [r.path for r in reports] == [files[0], files[2]]
    assert [k.kernel.name for r in reports for k in r.kernels] == ["saxpy", "jacobi"]
    assert said == [f"{binary}: skipped: binary file"]
    assert stages == [("analysing", 1, 3), ("analysing", 2, 3), ("analysing", 3, 3)]


def test_compiler_counts_refine_the_files_that_compile(tmp_path: Path) -> None:
    # without nvcc (an empty PATH and no toolkit setting) the compile gives a reason, which
    # joins the kernel's terms: the verdict was estimated again after the compile
    ws = Workspace(Config(counts="auto", nvcc=str(tmp_path / "no-nvcc")))
    stages: list[tuple[str, int, int]] = []
    (report,) = run_files(
        ws, [str(EXAMPLES / "saxpy.cu")], progress=lambda *s: stages.append(s), say=print
    )
    assert ("compiling", 1, 1) in stages
    note = report.kernels[0].verdict.terms[-1]
    assert isinstance(note, NoteTerm) and note.text.startswith("counts: source (nvcc:")
