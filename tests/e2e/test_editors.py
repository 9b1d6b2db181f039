"""End to end through real editors, headless, against `roofline-lsp serve` over stdio.

Each driver (tests/e2e/editors/) opens a .cu file the way a user's configuration in the
README would (Emacs: auto-mode-alist + `eglot-ensure`; Neovim: vim.lsp.config +
vim.lsp.enable) and, from a fresh start with no edit, asks for inlay hints (and code lenses
in Neovim) at once, waits for the server's diagnostics, hovers the kernel's name and a line
of its body, opens an OpenMP file and asks for its hints, shuts the server down as the editor
does and prints what the editor received as JSON lines. Beside clangd: Neovim attaches both
servers to the same buffer; Eglot runs one server per mode (roofline-lsp for CUDA/HIP,
clangd for C/C++), a second Emacs run. The editors and clangd come from
.ci/install-editors.sh (Emacs >= 29 with Eglot, Neovim >= 0.11, clangd); without one its
tests skip locally and fail under CI.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

REPO = Path(__file__).resolve().parents[2]
EDITORS_DIR = REPO / "tests" / "e2e" / "editors"
FIXTURE = REPO / "tests" / "fixtures" / "editors" / "scale_shift.cu"
OMP_FIXTURE = REPO / "tests" / "fixtures" / "editors" / "jacobi_omp.cpp"
KERNEL = "scale_shift"
MAX_HOVER_LINES, MAX_HOVER_COLUMNS = 12, 100
# The line of the fixture whose unsuffixed literal makes the fp32 kernel do an fp64 add.
FP64_LINE_MARK = "+ 1.0)"
DRIVER_TIMEOUT_S = 30  # each driver's own budget; the subprocess gets a little more


@dataclass(frozen=True)
class Editor:
    name: str
    executable: str  # looked up on PATH
    minimum: tuple[int, int]
    version_re: str  # on the first line of `<executable> --version`
    argv: tuple[str, ...]  # after the executable; the file to open is appended

    def command(self, exe: str, source: Path) -> list[str]:
        return [exe, *self.argv, str(source)]


EDITORS = {
    "emacs": Editor(
        name="Emacs + Eglot",
        executable="emacs",
        minimum=(29, 0),
        version_re=r"(\d+)\.(\d+)",
        argv=("--batch", "-Q", "-l", str(EDITORS_DIR / "eglot-driver.el")),
    ),
    "nvim": Editor(
        name="Neovim",
        executable="nvim",
        minimum=(0, 11),
        version_re=r"v(\d+)\.(\d+)",
        argv=("--clean", "-l", str(EDITORS_DIR / "nvim-driver.lua")),
    ),
}


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def _unavailable(reason: str) -> NoReturn:
    if _in_ci():
        pytest.fail(f"{reason} (CI is set: .ci/install-editors.sh should have installed it)")
    pytest.skip(reason)


def _find(editor: Editor) -> str:
    exe = shutil.which(editor.executable)
    want = ".".join(map(str, editor.minimum))
    if exe is None:
        _unavailable(f"{editor.executable} is not installed (run .ci/install-editors.sh)")
    first = subprocess.run(
        [exe, "--version"], capture_output=True, text=True, timeout=20, check=False
    ).stdout.partition("\n")[0]
    m = re.search(editor.version_re, first)
    if m is None or (int(m.group(1)), int(m.group(2))) < editor.minimum:
        _unavailable(f"need {editor.executable} >= {want}, found {first!r}")
    return exe


def _server_command() -> list[str]:
    """`roofline-lsp serve` from the environment running the tests, not whatever is on PATH."""
    bindir = Path(sys.executable).parent
    script = bindir / "roofline-lsp"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script), "serve"]
    return [sys.executable, "-m", "roofline_lsp", "serve"]


def _clangd(required: bool) -> str | None:
    """clangd's path; without it: skip (fail under CI) when ``required``, else None."""
    exe = shutil.which("clangd")
    if exe is None and required:
        _unavailable("clangd is not installed (run .ci/install-editors.sh)")
    return exe


def _run_driver(
    editor: Editor, source: Path, workdir: Path, omp: Path, clangd: str | None
) -> list[dict[str, Any]]:
    exe = _find(editor)
    env = dict(os.environ)
    env.update(
        ROOFLINE_LSP_COMMAND=shlex.join(_server_command()),
        ROOFLINE_E2E_SYMBOL=KERNEL,
        ROOFLINE_E2E_TIMEOUT=str(DRIVER_TIMEOUT_S),
        ROOFLINE_E2E_OMP=str(omp),
        ROOFLINE_E2E_CLANGD=clangd or "",
        # Keep the editors' and the server's state and logs out of the user's home.
        XDG_CACHE_HOME=str(workdir / "xdg" / "cache"),
        XDG_STATE_HOME=str(workdir / "xdg" / "state"),
        XDG_DATA_HOME=str(workdir / "xdg" / "data"),
        XDG_CONFIG_HOME=str(workdir / "xdg" / "config"),
    )
    try:
        proc = subprocess.run(
            editor.command(exe, source),
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=DRIVER_TIMEOUT_S + 15,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{editor.name} did not exit within {e.timeout}s; stderr:\n{e.stderr!r}")
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0:
        errors = [e["message"] for e in events if e.get("event") == "error"]
        pytest.fail(
            f"{editor.name} driver exited {proc.returncode}: {errors or 'no error event'}\n"
            f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-6000:]}"
        )
    return events


def _line_of(text: str, mark: str) -> int:
    """0-based index of the only line containing `mark`."""
    hits = [i for i, line in enumerate(text.splitlines()) if mark in line]
    assert len(hits) == 1, f"fixture should contain {mark!r} exactly once, found {hits}"
    return hits[0]


def _covers(d: dict[str, Any], line: int, column: int) -> bool:
    """Diagnostic ``d`` (0-based LSP range) starts on ``line`` at or before ``column`` and
    reaches past it (an empty range counts when it is exactly there)."""
    if d["line"] != line or d["character"] > column:
        return False
    return d["endLine"] > line or d["endCharacter"] > column or d["character"] == column


def _of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("event") == kind]


# Emacs runs twice: roofline-lsp for every C/C++/CUDA/HIP mode, then one server per mode
# beside clangd. Neovim runs once, with clangd attached beside it when clangd is installed.
SETUPS = ("emacs", "emacs+clangd", "nvim")


@pytest.fixture(scope="module", params=SETUPS)
def editor_events(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, list[dict[str, Any]]]:
    """Run one editor's driver once per module; the tests below read what it printed."""
    setup: str = request.param
    key = setup.split("+")[0]
    clangd = _clangd(required=True) if "clangd" in setup else None
    if key == "nvim":
        clangd = _clangd(required=False)
    # A copy outside the repository: the editor then sees a project of just these files.
    workdir = tmp_path_factory.mktemp(key)
    source = workdir / FIXTURE.name
    shutil.copyfile(FIXTURE, source)
    omp = workdir / OMP_FIXTURE.name
    shutil.copyfile(OMP_FIXTURE, omp)
    return setup, _run_driver(EDITORS[key], source, workdir, omp, clangd)


def test_editor_starts_roofline_lsp_and_stops_it_cleanly(
    editor_events: tuple[str, list[dict[str, Any]]],
) -> None:
    setup, events = editor_events
    servers = _of(events, "server")
    assert len(servers) == 1, events
    assert servers[0]["command"][-1] == "serve"
    assert "roofline" in servers[0]["serverInfo"]["name"], servers[0]
    # The editor's shutdown request + exit notification end the server by itself: in Emacs
    # `eglot-shutdown` (jsonrpc.el kills a server still running 0.1 s after exit: "status 9").
    exits = _of(events, "exit")
    assert [e["status"] for e in exits] == [0], events
    if setup.startswith("emacs"):
        assert not [m for m in exits[0]["messages"] if "status 9" in m], exits
    assert _of(events, "done"), "driver did not finish"


def test_inlay_hints_in_the_first_response_without_an_edit(
    editor_events: tuple[str, list[dict[str, Any]]],
) -> None:
    _, events = editor_events
    first = _of(events, "first_hints")
    assert len(first) == 1, events
    # asked right after didOpen: the server answered from its first analysis
    assert first[0]["count"] == 1, first
    assert first[0]["labels"][0].startswith("bandwidth-bound"), first


def test_code_lenses_and_displayed_hints_in_neovim(
    editor_events: tuple[str, list[dict[str, Any]]],
) -> None:
    setup, events = editor_events
    if setup != "nvim":
        pytest.skip("Eglot has no code lenses")
    lenses = _of(events, "lenses")
    assert lenses and lenses[0]["count"] == 2, events
    assert any("bandwidth-bound" in str(t) for t in lenses[0]["titles"]), lenses
    # Neovim itself shows the hint (after the server's refresh or its own request)
    assert [e["count"] for e in _of(events, "displayed_hints")] == [1], events


def test_hover_fits_and_is_plain_text_when_asked(
    editor_events: tuple[str, list[dict[str, Any]]],
) -> None:
    setup, events = editor_events
    hover = _of(events, "hover")[0]
    lines = hover["text"].rstrip("\n").split("\n")
    assert len(lines) <= MAX_HOVER_LINES, hover["text"]
    assert max(len(line) for line in lines) <= MAX_HOVER_COLUMNS, hover["text"]
    # the first line is the verdict
    assert lines[0].lstrip("`").startswith(KERNEL) and "bandwidth-bound" in lines[0], lines
    if setup.startswith("emacs"):
        # Eglot without markdown-mode asks for plain text: no Markdown syntax comes back
        assert hover["kind"] == "plaintext", hover
        assert not any(m in hover["text"] for m in ("**", "`", "|")), hover["text"]
    else:
        assert hover["kind"] == "markdown", hover


def test_hover_inside_the_body_is_one_line_about_that_line(
    editor_events: tuple[str, list[dict[str, Any]]],
) -> None:
    _, events = editor_events
    body = _of(events, "body_hover")
    assert len(body) == 1, events
    text = body[0]["text"]
    # the line of the kernel's only loads and store: all its DRAM bytes
    assert text.strip() == text.strip().splitlines()[0], text
    assert text.startswith(f"line {body[0]['line'] + 1}: 100% of DRAM bytes"), text


def test_openmp_file_gets_hints_without_an_edit(
    editor_events: tuple[str, list[dict[str, Any]]],
) -> None:
    setup, events = editor_events
    if setup == "emacs+clangd":
        pytest.skip("one server per mode: clangd has the C++ file")
    omp = _of(events, "omp_hints")
    assert len(omp) == 1 and omp[0]["count"] == 1, events
    assert omp[0]["labels"][0].startswith("bandwidth-bound"), omp


def test_clangd_beside_roofline_lsp(editor_events: tuple[str, list[dict[str, Any]]]) -> None:
    setup, events = editor_events
    if setup == "emacs":
        pytest.skip("the emacs+clangd run")
    if setup == "nvim":
        _clangd(required=True)
        # both servers on the same buffer: clangd's hover and ours, each its own
        names = _of(events, "clients")[0]["names"]
        assert sorted(names) == ["clangd", "roofline"], names
        theirs = _of(events, "clangd_hover")
        assert theirs and KERNEL in str(theirs[0]["text"]), events
        return
    # Eglot: clangd manages the C++ file, answers its hover, and shuts down cleanly
    clangd = _of(events, "clangd")
    assert len(clangd) == 1, events
    assert clangd[0]["serverInfo"]["name"] == "clangd", clangd
    assert "jacobi" in str(clangd[0]["hover"]) and clangd[0]["exit"] == 0, clangd


def test_hover_on_kernel_name_shows_verdict(
    editor_events: tuple[str, list[dict[str, Any]]],
) -> None:
    setup, events = editor_events
    key = setup.split("+")[0]
    hovers = _of(events, "hover")
    assert len(hovers) == 1, events
    hover = hovers[0]
    # The driver put the cursor on the kernel's name in its definition.
    assert hover["symbol"] == KERNEL
    line = FIXTURE.read_text(encoding="utf-8").splitlines()[hover["line"]]
    assert line[hover["character"] :].startswith(KERNEL), (line, hover)
    # The card is about this kernel: two flops per 8 DRAM bytes, bandwidth-bound on any GPU.
    assert KERNEL in hover["text"], hover
    assert "bandwidth-bound" in hover["text"], hover
    if key == "emacs":
        # Eglot's own rendering of the card (what ElDoc displays) carries it too.
        assert "bandwidth-bound" in hover["rendered"], hover


def test_roofline_diagnostic_on_fp64_literal_line(
    editor_events: tuple[str, list[dict[str, Any]]],
) -> None:
    setup, events = editor_events
    key = setup.split("+")[0]
    text = FIXTURE.read_text(encoding="utf-8")
    expected = _line_of(text, FP64_LINE_MARK)
    column = text.splitlines()[expected].index(FP64_LINE_MARK) + FP64_LINE_MARK.index("1.0")
    diagnostics = _of(events, "diagnostic")
    ours = [d for d in diagnostics if d["source"] == "roofline"]
    assert ours, f"no diagnostic with source 'roofline' in {diagnostics}"
    # On the literal itself (ASCII line: UTF-16/UTF-8/UTF-32 columns agree).
    on_line = [d for d in ours if _covers(d, expected, column)]
    assert on_line, f"no roofline diagnostic at line {expected + 1}, column {column}: {ours}"
    # ... and the editor shows it in the buffer.
    if key == "emacs":
        # Flymake: 1-based lines, text "source [code]: message".
        shown = [
            f
            for f in _of(events, "flymake")
            if f["line"] == on_line[0]["line"] + 1 and f["text"].startswith("roofline")
        ]
    else:
        shown = [
            d
            for d in _of(events, "shown")
            if d["line"] == on_line[0]["line"] and d["source"] == "roofline"
        ]
    assert shown, f"{EDITORS[key].name} does not show it: {events}"
