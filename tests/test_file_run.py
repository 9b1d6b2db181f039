"""``check``'s run (``engine/file_run.py``): every readable file analysed in order, unreadable
ones reported in one line, each stage's progress, and no compile with source counts; the
process pool gives what one process gives, and a warm run with compiler counts compiles
nothing."""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from roofline_lsp.engine.file_run import check_files, outcome_of, run_files
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


def _cached(tmp_path: Path, **kw: object) -> Config:
    cfg = Config(**kw)  # type: ignore[arg-type]
    return replace(cfg, llm=replace(cfg.llm, cache_dir=str(tmp_path / "cache")))


def test_the_pool_gives_what_one_process_gives(tmp_path: Path) -> None:
    binary = tmp_path / "blob.cu"
    binary.write_bytes(b"\x00\x01" * 100)
    files = sorted(str(p) for p in EXAMPLES.iterdir())
    files.insert(2, str(binary))
    cfg = _cached(tmp_path, counts="source", compare_gpus=("a100",))
    said1: list[str] = []
    said2: list[str] = []
    one = check_files(cfg, files, jobs=1, use_cache=False, say=said1.append)
    two = check_files(cfg, files, jobs=2, use_cache=False, say=said2.append)
    assert one == two and said1 == said2 == [f"{binary}: skipped: binary file"]
    assert [o.path for o in one] == [f for f in files if f != str(binary)]
    # the same as rendering the reports of the one-process run
    ws = Workspace(cfg)
    reports = run_files(ws, files, progress=lambda *s: None, say=lambda s: None)
    assert one == [outcome_of(fr, None, ws.registry()) for fr in reports]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_warm_run_with_compiler_counts_compiles_nothing(tmp_path: Path) -> None:
    # an nvcc that logs each compile (not the version queries) and runs the real one
    log = tmp_path / "compiles.log"
    shim = tmp_path / "bin" / "nvcc"
    shim.parent.mkdir()
    shim.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *--version*|*--list-gpu-arch*) ;; *) echo "$*" >> {log} ;; esac\n'
        f'exec {shutil.which("nvcc")} "$@"\n'
    )
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(EXAMPLES / "saxpy.cu", src)
    shutil.copy(EXAMPLES / "nbody.cu", src)
    files = sorted(str(p) for p in src.iterdir())
    cfg = _cached(tmp_path, counts="auto", nvcc=str(shim))
    cold = check_files(cfg, files, jobs=2)
    assert log.exists() and len(log.read_text().splitlines()) >= 2
    os.remove(log)
    warm = check_files(cfg, files, jobs=2)
    assert not log.exists()
    assert all(o.cached for o in warm) and [o.text for o in warm] == [o.text for o in cold]
    assert any("counts: PTX" in s for o in cold for s in o.json)  # it did compile
