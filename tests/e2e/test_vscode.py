"""The packaged extension (the ``.vsix`` of ``npm run package``) in a real VS Code: code-server
4.100.3 (VS Code 1.100.3 in the browser, installed from npm by ``.ci/install-code-server.sh``),
driven by Debian's headless chromium over the DevTools protocol, everything on 127.0.0.1.

A workspace with a CUDA and an OpenMP file is opened the way a user opens it; what the tests
assert is read from VS Code's DOM: the code lens above a kernel, the inlay hint (whole with
``roofline.inlayHints`` on, gone under the default, where the lens says it), the hover card on
a kernel name (and that it fits the hover box at 1400x900: no scrollbar), a diagnostic in the
Problems panel, the target GPU in the status bar, and picking another GPU in the quick pick
(saved in the workspace's settings) changing a verdict.
Screenshots and the extension host's log are kept in ``build/e2e-vscode/`` (or
``$ROOFLINE_E2E_OUT``); ``ROOFLINE_VSCODE_SCREENSHOT=docs/vscode.png`` also saves the hover
screenshot as the README's.

Skips without code-server, chromium or the ``.vsix`` (saying which and how to get it); under
CI (CI=true) it fails instead. Run locally:
``bash .ci/install-code-server.sh && (cd client-vscode && npm ci && npm run package) &&
python -m pytest -q -p no:cacheprovider tests/e2e/test_vscode.py``."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from headless_browser import CHROMIUM_FLAGS, Browser, chromium_path

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client-vscode"
CODE_SERVER_VERSION = "4.100.3"
WIDTH, HEIGHT = 1400, 900
OUT = Path(os.environ.get("ROOFLINE_E2E_OUT", str(ROOT / "build" / "e2e-vscode")))
CUDA_FILE = ROOT / "examples" / "saxpy.cu"  # the README's screenshot
OPENMP_FILE = ROOT / "examples" / "stencil_omp.cpp"  # its data clauses draw a diagnostic
FLIP_FILE = ROOT / "tests" / "fixtures" / "lsp" / "fp64_flip.cu"  # fp64 AI between two ridges
FLIP_GPU = "RTX-3080"  # fp64 ridge 0.52: compute-bound there, bandwidth-bound on the H100


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> None:
    if in_ci():
        pytest.fail(f"{reason}; CI is set, so this test must not skip")
    pytest.skip(reason)


def code_server_path() -> str | None:
    """``$ROOFLINE_CODE_SERVER``, else where ``.ci/install-code-server.sh`` puts it, else PATH."""
    given = os.environ.get("ROOFLINE_CODE_SERVER")
    if given:
        return given if os.access(given, os.X_OK) else None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = Path(
        os.environ.get("CODE_SERVER_DIR")
        or cache / "roofline-lsp" / f"code-server-{CODE_SERVER_VERSION}"
    )
    exe = folder / "node_modules" / ".bin" / "code-server"
    if exe.exists() and (folder / ".installed").exists():
        return str(exe)
    return shutil.which("code-server")


def packaged_vsix() -> Path | None:
    """``$ROOFLINE_VSIX``, else the ``.vsix`` in client-vscode/ when it is newer than the
    extension's sources, else one packaged now (``npm run package``) when node_modules is
    there."""
    given = os.environ.get("ROOFLINE_VSIX")
    if given:
        return Path(given) if Path(given).is_file() else None
    sources = [CLIENT / "package.json", *(CLIENT / "src").glob("*.ts")]
    newest = max(p.stat().st_mtime for p in sources)
    built = sorted(CLIENT.glob("roofline-lsp-*.vsix"), key=lambda p: p.stat().st_mtime)
    if built and built[-1].stat().st_mtime >= newest:
        return built[-1]
    if not (CLIENT / "node_modules").is_dir() or shutil.which("npm") is None:
        return None
    done = subprocess.run(
        ["npm", "run", "package"], cwd=CLIENT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    built = sorted(CLIENT.glob("roofline-lsp-*.vsix"), key=lambda p: p.stat().st_mtime)
    return built[-1] if built else None


class LocalBrowser(Browser):
    """Chromium for a page served on 127.0.0.1: loopback stays off the dead proxy (every
    other address still goes to it and fails)."""

    flags = tuple(f for f in CHROMIUM_FLAGS if not f.startswith("--proxy-bypass-list"))


USER_SETTINGS: dict[str, object] = {
    "roofline.counts": "source",  # no compile in the background: the same verdicts anywhere
    "roofline.compareGpus": ["h100"],  # a "Differs:" line once the target is another GPU
    "editor.inlayHints.enabled": "on",
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.ignoreRecommendations": True,
    "update.mode": "none",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Seen:
    """What the session saw, for the tests to judge (None: it never appeared)."""

    lens: str | None = None
    omp_lens: str | None = None
    hint: dict[str, Any] | None = None
    hint_gone: bool = False
    hover: dict[str, Any] | None = None
    hover_after: dict[str, Any] | None = None
    problems: str | None = None
    status: str | None = None
    lens_before: str | None = None
    lens_after: str | None = None
    workspace_settings: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)


class Session:
    """One code-server and one browser page on it, with the helpers the walk-through needs."""

    def __init__(self, b: Browser) -> None:
        self.b = b

    def js(self, expression: str) -> Any:
        return self.b.evaluate(expression)

    def wait(self, expression: str, timeout: float = 60.0) -> Any:
        """Polls ``expression`` until it is truthy; its value, or None after ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.25)
        return None

    def key(self, key: str, code: str, vk: int, modifiers: int = 0) -> None:
        """One key press (modifiers: 2 Ctrl, 8 Shift)."""
        base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers}
        self.b.call("Input.dispatchKeyEvent", {"type": "rawKeyDown", **base})
        self.b.call("Input.dispatchKeyEvent", {"type": "keyUp", **base})

    def enter(self) -> None:
        base = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}
        self.b.call("Input.dispatchKeyEvent", {"type": "keyDown", "text": "\r", **base})
        self.b.call("Input.dispatchKeyEvent", {"type": "keyUp", **base})

    def type(self, text: str) -> None:
        self.b.call("Input.insertText", {"text": text})

    def mouse(self, x: float, y: float, click: bool = False) -> None:
        self.b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        if click:
            for kind in ("mousePressed", "mouseReleased"):
                self.b.call(
                    "Input.dispatchMouseEvent",
                    {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                )

    def shot(self, name: str, also: str | None = None) -> None:
        data = base64.b64decode(self.b.call("Page.captureScreenshot", {"format": "png"})["data"])
        (OUT / name).write_bytes(data)
        if also:
            Path(also).write_bytes(data)

    def quick_input_open(self) -> bool:
        return bool(
            self.wait(
                "(() => { const w = document.querySelector('.quick-input-widget');"
                " return !!w && w.style.display !== 'none'; })()",
                20,
            )
        )

    def open_file(self, name: str) -> bool:
        """A click on the file in the Explorer; True once its tab is active."""
        row = f".explorer-folders-view .monaco-list-row[aria-label={json.dumps(name)}]"
        at = self.wait(
            f"(() => {{ const e = document.querySelector('{row}'); if (!e) return '';"
            " const r = e.getBoundingClientRect();"
            " return JSON.stringify({x: r.x + r.width / 2, y: r.y + r.height / 2}); })()",
            60,
        )
        if not at:
            return False
        box = json.loads(at)
        self.mouse(box["x"], box["y"], click=True)
        tab = f".tab.active[aria-label^={json.dumps(name)}]"
        return bool(self.wait(f"!!document.querySelector('{tab}')", 30))

    def lens_text(self, contains: str, timeout: float = 90.0) -> str | None:
        """The text of the code lens zone that contains ``contains``."""
        found: str | None = self.wait(
            "[...document.querySelectorAll('.codelens-decoration')].map(e => e.innerText)"
            f".find(t => t.includes({json.dumps(contains)})) || ''",
            timeout,
        )
        return found

    def hover_card(self, kernel: str) -> dict[str, Any] | None:
        """Hovers the kernel's name on its ``__global__`` line; the card as HOVER_JS reads it."""
        box = self.rect_of_token("__global__", kernel)
        if box is None:
            return None
        self.mouse(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)
        if not self.wait(f"!!({HOVER_JS})", 60):
            return None
        time.sleep(1.0)  # the hover's fade-in and its last layout
        card: dict[str, Any] | None = json.loads(self.js(HOVER_JS) or "null")
        return card

    def rect_of_token(self, line_has: str, token: str) -> dict[str, float] | None:
        """Screen box of the token ``token`` on the first visible line containing ``line_has``."""
        box = self.js(
            "(() => { for (const line of document.querySelectorAll('.view-line')) {"
            f" if (!line.textContent.includes({json.dumps(line_has)})) continue;"
            " for (const s of line.querySelectorAll('span > span')) {"
            f"  if (s.textContent === {json.dumps(token)}) {{"
            "   const r = s.getBoundingClientRect();"
            "   return JSON.stringify({x: r.x, y: r.y, w: r.width, h: r.height}); } } }"
            " return ''; })()"
        )
        return json.loads(box) if box else None


# the verdict inlay hint's text and where it ends, against the editor's right edge
HINT_JS = (
    "(() => { const ed = document.querySelector('.monaco-editor .overflow-guard');"
    " for (const e of document.querySelectorAll('.view-line span')) {"
    "  if (e.children.length === 0 && /-bound\\s·\\s/.test(e.textContent)) {"
    "   const r = e.getBoundingClientRect(), g = ed.getBoundingClientRect();"
    "   return JSON.stringify({text: e.textContent.replace(/\\s/g, ' '), right: r.right,"
    "    editorRight: g.right}); } }"
    " return ''; })()"
)
# the editor's hover card: its text, its box, and whether its content overflows the box
HOVER_JS = (
    "(() => { const h = [...document.querySelectorAll('.monaco-editor .monaco-hover')]"
    "  .find(e => !e.classList.contains('hidden') && /-bound/.test(e.innerText));"
    " if (!h) return '';"
    " const sc = h.querySelector('.monaco-scrollable-element');"
    " const c = h.querySelector('.monaco-hover-content') || sc.firstElementChild;"
    " const bars = [...sc.querySelectorAll(':scope > .scrollbar')].map(b => ({"
    "  cls: b.className, slider: (b.querySelector('.slider') || {}).offsetHeight || 0,"
    "  sliderW: (b.querySelector('.slider') || {}).offsetWidth || 0}));"
    " const r = h.getBoundingClientRect();"
    " return JSON.stringify({text: h.innerText, box: [r.x, r.y, r.width, r.height],"
    "  clientHeight: sc.clientHeight, scrollHeight: c.scrollHeight,"
    "  clientWidth: sc.clientWidth, scrollWidth: c.scrollWidth, bars}); })()"
)


def walk_through(s: Session, proj: Path, seen: Seen) -> None:
    """What a new user does: open the CUDA file, read the lens and the hint, hover the kernel
    name, open the OpenMP file and the Problems panel, then pick another GPU."""

    def step(ok: object, what: str) -> bool:
        if not ok:
            seen.errors.append(what)
            s.shot(f"failed-{len(seen.errors)}.png")
        return bool(ok)

    if not step(
        s.wait("!!document.querySelector('.monaco-workbench .part.statusbar')", 120), "no workbench"
    ):
        return
    if not step(s.open_file(CUDA_FILE.name), f"could not open {CUDA_FILE.name}"):
        return
    seen.lens = s.lens_text("roofline:")
    if not step(seen.lens, "no code lens on saxpy (build/e2e-vscode/exthost-*Roofline.log)"):
        return  # the extension or its server did not start: the rest would only time out
    # the inlay hint ("on" in the workspace settings): injected into the signature's line, its
    # spaces as non-breaking ones
    seen.hint = json.loads(s.wait(HINT_JS, 60) or "null")
    step(seen.hint, "no inlay hint on saxpy")
    # back to the default ("auto"): the lens above says it, the hint goes away
    # (the workspace's settings file: VS Code watches it, not the user's in code-server)
    (proj / ".vscode" / "settings.json").write_text("{}", encoding="utf-8")
    seen.hint_gone = seen.hint is not None and bool(s.wait(f"!({HINT_JS})", 30))
    step(seen.hint_gone, "the inlay hint stayed under the default roofline.inlayHints")
    seen.status = s.wait(
        "[...document.querySelectorAll('.statusbar-item')].map(e => e.innerText)"
        ".find(t => /H100|RTX|A100/.test(t)) || ''",
        30,
    )
    step(seen.status, "no GPU in the status bar")
    seen.hover = s.hover_card("saxpy")
    step(seen.hover, "no hover card on the kernel name")
    s.shot("1-cuda-lens-hover.png", os.environ.get("ROOFLINE_VSCODE_SCREENSHOT"))
    s.mouse(5, HEIGHT / 2)  # away: the hover closes

    if step(s.open_file(OPENMP_FILE.name), f"could not open {OPENMP_FILE.name}"):
        seen.omp_lens = s.lens_text("roofline:")
        step(seen.omp_lens, "no code lens on the OpenMP region")
        s.key("M", "KeyM", 77, modifiers=2 | 8)  # Ctrl+Shift+M: the Problems panel
        seen.problems = s.wait(
            "(() => { const p = document.querySelector('.markers-panel');"
            " return p && /RL\\d{3}/.test(p.innerText) ? p.innerText : ''; })()",
            60,
        )
        step(seen.problems, "no roofline diagnostic in the Problems panel")
        s.shot("2-openmp-problems.png")

    if not step(s.open_file(FLIP_FILE.name), f"could not open {FLIP_FILE.name}"):
        return
    seen.lens_before = s.lens_text("roofline:")
    status = s.js(
        "(() => { const e = [...document.querySelectorAll('.statusbar-item')]"
        ".find(e => /H100|RTX|A100/.test(e.innerText));"
        " if (!e) return ''; const r = e.getBoundingClientRect();"
        " return JSON.stringify({x: r.x + r.width / 2, y: r.y + r.height / 2}); })()"
    )
    if not step(status and seen.lens_before, "no lens or status-bar GPU on the fp64 kernel"):
        return
    at = json.loads(status)
    s.mouse(at["x"], at["y"], click=True)  # the status bar's GPU opens the picker
    if not step(s.quick_input_open(), "the GPU picker did not open"):
        return
    s.type(FLIP_GPU)
    row = f".quick-input-list .monaco-list-row[aria-label*={json.dumps(FLIP_GPU)}]"
    if not step(s.wait(f"!!document.querySelector('{row}')", 30), f"{FLIP_GPU} not offered"):
        return
    s.shot("3-gpu-picker.png")
    s.enter()
    # with a folder open: where to save it, this workspace first
    asked = s.wait(
        "(() => { const t = document.querySelector('.quick-input-widget .quick-input-title');"
        f" return t && t.innerText.includes({json.dumps(FLIP_GPU)}) &&"
        " !!document.querySelector('.quick-input-list .monaco-list-row') ? t.innerText : ''; })()",
        30,
    )
    if not step(asked, "not asked where to save the GPU"):
        return
    s.shot("4-gpu-scope.png")
    s.enter()
    seen.lens_after = s.lens_text(f"on {FLIP_GPU}", 60)
    step(seen.lens_after, "the lens did not change to the new GPU")
    # a fuller card: compute-bound here, and differing on the compared GPU
    seen.hover_after = s.hover_card("horner64")
    step(seen.hover_after, "no hover card on horner64")
    s.shot("5-after-gpu-change.png")
    settings = proj / ".vscode" / "settings.json"
    if settings.exists():
        seen.workspace_settings = json.loads(settings.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def seen() -> Iterator[Seen]:
    cs = code_server_path()
    if cs is None:
        unavailable(
            f"code-server {CODE_SERVER_VERSION} is not installed "
            "(bash .ci/install-code-server.sh installs it)"
        )
    exe = chromium_path()
    if exe is None:
        unavailable("chromium is not installed (bash .ci/install-browser.sh installs it)")
    vsix = packaged_vsix()
    if vsix is None:
        unavailable("no packaged extension: run `npm ci && npm run package` in client-vscode/")
    assert cs is not None and exe is not None and vsix is not None
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.png"):
        old.unlink()
    tmp = Path(tempfile.mkdtemp(prefix="roofline-vscode-"))
    proj, ext, data = tmp / "proj", tmp / "ext", tmp / "data"
    proj.mkdir()
    for f in (CUDA_FILE, OPENMP_FILE, FLIP_FILE):
        shutil.copy(f, proj / f.name)
    (data / "User").mkdir(parents=True)
    (data / "User" / "settings.json").write_text(
        json.dumps({**USER_SETTINGS, "roofline.server.pythonPath": sys.executable}),
        encoding="utf-8",
    )
    # the hint beside the lens first, then back to the default ("auto")
    (proj / ".vscode").mkdir()
    (proj / ".vscode" / "settings.json").write_text(
        json.dumps({"roofline.inlayHints": "on"}), encoding="utf-8"
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    common = ["--extensions-dir", str(ext), "--user-data-dir", str(data)]
    done = subprocess.run(
        [cs, "--install-extension", str(vsix), *common],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    port = free_port()
    server = subprocess.Popen(
        [
            cs,
            "--auth",
            "none",
            "--bind-addr",
            f"127.0.0.1:{port}",
            *common,
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
            str(proj),
        ],
        stdout=subprocess.DEVNULL,
        stderr=(OUT / "code-server.log").open("w"),
        env=env,
        start_new_session=True,  # its own process group: stopped with every child it starts
    )
    b: Browser | None = None
    result = Seen()
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError), urllib.request.urlopen(url + "healthz", timeout=5):
                break
            assert server.poll() is None, (
                "code-server exited at start (build/e2e-vscode/code-server.log)"
            )
            assert time.monotonic() < deadline, "code-server did not answer in 120 s"
            time.sleep(0.5)
        b = LocalBrowser(exe, WIDTH, HEIGHT)
        b.open(f"{url}?folder={proj}", timeout=120)
        walk_through(Session(b), proj, result)
        (OUT / "seen.json").write_text(json.dumps(dataclasses.asdict(result), indent=1))
        yield result
    finally:
        if b is not None:
            b.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        for log in data.glob("logs/*/exthost*/**/*.log"):
            shutil.copy(log, OUT / f"exthost-{log.name}")
        shutil.rmtree(tmp, ignore_errors=True)


def check(seen: Seen, value: object, what: str) -> None:
    assert value, f"{what}; steps that failed: {seen.errors} (screenshots in {OUT})"


def test_code_lens_gives_the_verdict_on_the_target_gpu(seen: Seen) -> None:
    check(seen, seen.lens, "no code lens")
    assert seen.lens is not None
    assert "bandwidth-bound on H100-SXM5-80GB" in seen.lens and "explain" in seen.lens
    check(seen, seen.omp_lens, "no code lens on the OpenMP region")
    assert seen.omp_lens is not None and "-bound on H100-SXM5-80GB" in seen.omp_lens


def test_inlay_hint_is_whole_and_only_where_asked_for(seen: Seen) -> None:
    check(seen, seen.hint, "no inlay hint")
    assert seen.hint is not None
    text = seen.hint["text"].strip()
    # VS Code cuts hints at 43 characters: this one is whole
    assert text.startswith("bandwidth-bound · fp32 AI") and len(text) <= 43, text
    assert "…" not in text
    # by default the lens above says it: no hint
    check(seen, seen.hint_gone, "the hint stayed with roofline.inlayHints at its default")


def fits(
    h: dict[str, Any],
) -> None:  # no scrollbar: the card's content is no taller or wider than the box showing it, and
    # each scrollbar's slider spans its whole track (nothing to scroll to)
    assert h["scrollHeight"] <= h["clientHeight"] + 1, h
    assert h["scrollWidth"] <= h["clientWidth"] + 1, h
    bars = {("vertical" if "vertical" in b["cls"] else "horizontal"): b for b in h["bars"]}
    assert bars["vertical"]["slider"] >= h["clientHeight"] - 1, h
    assert bars["horizontal"]["sliderW"] >= h["clientWidth"] - 1 - 10, h  # 10: the corner
    x, y, w, hh = h["box"]
    assert x >= 0 and x + w <= WIDTH and y >= 0 and y + hh <= HEIGHT, h["box"]


def test_hover_on_the_kernel_name_fits_the_hover_box(seen: Seen) -> None:
    check(seen, seen.hover, "no hover card")
    h = seen.hover
    assert h is not None
    assert "saxpy" in h["text"] and "bandwidth-bound" in h["text"], h["text"]
    # a float kernel below every ridge: said so, with its fp32 intensity
    assert "every AI below its ridge: fp32" in h["text"], h["text"]
    assert "decides" not in h["text"] and "Dominant terms" not in h["text"], h["text"]
    fits(h)


def test_a_fuller_hover_card_fits_too(seen: Seen) -> None:
    check(seen, seen.hover_after, "no hover card after the GPU change")
    h = seen.hover_after
    assert h is not None
    assert f"compute-bound on {FLIP_GPU}" in h["text"] and "decides" in h["text"], h["text"]
    assert "Differs: bandwidth-bound on H100-SXM5-80GB" in h["text"], h["text"]
    fits(h)


def test_problems_panel_lists_the_diagnostic(seen: Seen) -> None:
    check(seen, seen.problems, "no roofline diagnostic in the Problems panel")
    assert seen.problems is not None
    assert "RL012" in seen.problems and OPENMP_FILE.name in seen.problems, seen.problems


def test_status_bar_shows_the_target_gpu(seen: Seen) -> None:
    check(seen, seen.status, "no GPU in the status bar")
    assert seen.status is not None and "H100-SXM5-80GB" in seen.status


def test_picking_another_gpu_changes_the_verdict_and_stays_in_the_workspace(seen: Seen) -> None:
    check(seen, seen.lens_before, "no lens before the GPU change")
    assert seen.lens_before is not None and "bandwidth-bound on H100-SXM5-80GB" in seen.lens_before
    check(seen, seen.lens_after, "the verdict did not change")
    assert seen.lens_after is not None and f"compute-bound on {FLIP_GPU}" in seen.lens_after
    # saved in the folder's .vscode/settings.json, not in every project's user settings
    assert seen.workspace_settings == {"roofline.gpu": FLIP_GPU}, seen.workspace_settings
