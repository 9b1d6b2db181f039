"""The roofline chart in a real headless chromium (Debian's ``chromium``, installed by
``.ci/install-browser.sh``), driven over the DevTools protocol with the network off: the
points, ceilings and ridge points are in the page's DOM, hovering a point shows its tooltip,
the table sorts and selects points, the GPU switch works, and the page made no request.
Skips locally without chromium; fails under CI (CI=true) instead.

``ROOFLINE_CHART_SCREENSHOT=docs/chart.png`` also saves the examples' chart as the README's
screenshot."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from headless_browser import Browser, chromium_path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from synthetic_project import write_project  # noqa: E402


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    exe = chromium_path()
    if exe is None:
        reason = "chromium is not installed (bash .ci/install-browser.sh installs it)"
        if in_ci():
            pytest.fail(f"{reason}; CI is set, so this test must not skip")
        pytest.skip(reason)
    b = Browser(exe, 1240, 1000)
    try:
        yield b
    finally:
        b.close()


def report(paths: list[str], out: Path, gpus: str, *extra: str) -> Path:
    """The chart written by the real command line, as a user runs it."""
    cmd = [sys.executable, "-m", "roofline_lsp", "report", *paths, "--gpu", gpus]
    done = subprocess.run(
        [*cmd, "--counts", "source", "--html", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out


def count(b: Browser, selector: str) -> int:
    n: int = b.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length")
    return n


def hover(b: Browser, selector: str) -> str:
    """Move the mouse onto the element's centre; the tooltip's text."""
    box = json.loads(
        b.evaluate(
            f"JSON.stringify(document.querySelector({json.dumps(selector)})"
            ".getBoundingClientRect())"
        )
    )
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    text: str = b.evaluate(
        "getComputedStyle(document.getElementById('tip')).display === 'block' ? "
        "document.getElementById('tip').innerText : ''"
    )
    return text


def requests_made(b: Browser) -> list[str]:
    urls: list[str] = b.evaluate(
        "performance.getEntriesByType('resource').map(function(e){return e.name;})"
    )
    return urls


def test_examples_chart_points_ceilings_tooltip(browser, tmp_path):
    page = report(
        [str(ROOT / "examples")], tmp_path / "examples.html", "h100,rtx4090",
        "--title", "Roofline: examples/",
    )  # fmt: skip
    browser.open(page.as_uri())
    assert browser.evaluate("document.body.dataset.ready") == "1"
    kernels = count(browser, "#kernels tbody tr")
    assert kernels >= 6
    # one estimated point per kernel and GPU; 4 ceilings, a DRAM slope and ridges per GPU
    for g in ("0", "1"):
        panel = f'svg.roofline[data-gpu="{g}"]'
        assert count(browser, f"{panel} .pt.estimated") == kernels
        assert count(browser, f"{panel} line.ceiling") == 4
        assert count(browser, f"{panel} line.dram") == 1
        assert count(browser, f"{panel} circle.ridge") >= 3
    # the first GPU is shown, the second hidden until switched to
    visible = "getComputedStyle(document.querySelector('svg.roofline[data-gpu=\"1\"]')).display"
    assert browser.evaluate(visible) == "none"
    browser.evaluate("document.querySelector('.tabs button[data-gpu=\"1\"]').click()")
    assert browser.evaluate(visible) == "block"
    # hover: name, file:line, intensities per precision, verdict, confidence, assumptions
    tip = hover(browser, 'svg.roofline[data-gpu="1"] .pt.estimated[data-k="0"]')
    first = browser.evaluate("document.querySelector('#kernels tbody tr').cells[0].textContent")
    where = browser.evaluate("document.querySelector('#kernels tbody tr').cells[1].textContent")
    assert tip.startswith(first) and where in tip
    assert "RTX-4090" in tip
    assert "AI per precision: fp64" in tip and "int" in tip
    assert "-bound (static, confidence" in tip
    assert "per thread" in tip or "per iteration" in tip  # what the estimate rests on
    # clicking a point selects its row; sorting the table by kernel name reorders it
    browser.evaluate("document.querySelector('svg.roofline[data-gpu=\"1\"] .pt[data-k=\"2\"]')"
                     ".dispatchEvent(new MouseEvent('click'))")  # fmt: skip
    assert browser.evaluate("document.querySelector('tr.sel').getAttribute('data-k')") == "2"
    browser.evaluate("document.querySelector('#kernels th[data-c=\"0\"]').click()")
    names = browser.evaluate(
        "Array.from(document.querySelectorAll('#kernels tbody tr'))"
        ".map(function(r){return r.cells[0].textContent;})"
    )
    assert names == sorted(names, key=str.lower) or names == sorted(names)
    browser.evaluate("document.querySelector('.tabs button[data-gpu=\"all\"]').click()")
    assert browser.evaluate(visible) == "block"
    assert requests_made(browser) == []  # nothing fetched: the page is self-contained
    shot = os.environ.get("ROOFLINE_CHART_SCREENSHOT")
    if shot:
        png = browser.call(
            "Page.captureScreenshot",
            {"format": "png", "clip": {"x": 0, "y": 0, "width": 1240, "height": 740, "scale": 1}},
        )["data"]
        Path(shot).write_bytes(base64.b64decode(png))


def test_measured_points_beside_estimates(browser, tmp_path):
    ncu = ROOT / "tests" / "fixtures" / "ncu"
    page = report(
        [str(ncu / "kernels.cu")], tmp_path / "measured.html", "h100",
        "--profile", str(ncu / "profile_raw.csv"),
    )  # fmt: skip
    browser.open(page.as_uri())
    measured = count(browser, ".pt.measured")
    assert measured >= 2
    assert count(browser, "line.link") == measured
    k = browser.evaluate("document.querySelector('.pt.measured').getAttribute('data-k')")
    tip = hover(browser, f'.pt.measured[data-k="{k}"]')
    assert "estimate:" in tip and "measured:" in tip and "(profile, confidence" in tip


def test_five_hundred_kernels_render(browser, tmp_path):
    project = tmp_path / "big"
    write_project(project)
    page = report([str(project)], tmp_path / "big.html", "h100,rtx4090")
    assert page.stat().st_size < 2_000_000
    browser.open(page.as_uri())
    assert browser.evaluate("document.body.dataset.ready") == "1"
    assert count(browser, "#kernels tbody tr") == 500
    assert count(browser, ".pt.estimated") == 1000
    assert count(browser, ".pt.flip") > 0  # fp64 kernels flip between the H100 and RTX 4090
    # a flipped point that no other point covers (points overlap in a crowded chart)
    k = browser.evaluate(
        "(Array.from(document.querySelectorAll('svg.roofline.on .pt.flip')).find(function(e){"
        "var r=e.getBoundingClientRect();"
        "return document.elementFromPoint(r.x+r.width/2,r.y+r.height/2)===e;})||{})"
        ".getAttribute('data-k')"
    )
    name = browser.evaluate(f"document.querySelector('tr[data-k=\"{k}\"]').cells[0].textContent")
    tip = hover(browser, f'svg.roofline.on .pt.flip[data-k="{k}"]')
    assert tip.startswith(name)
    assert "flips:" in tip and "-bound on H100-SXM5-80GB" in tip
