"""How much ``report`` costs over ``check``, and how fast its chart renders in chromium.

    python benchmarks/chart_speed.py [--runs N] [--gpu h100,rtx4090]

For ``examples/`` and a generated 500-kernel project (``tests/synthetic_project.py``):
the wall time of ``roofline-lsp check PATH`` and ``roofline-lsp report PATH --html`` as a
user runs them (separate processes, default settings, alternated, after one warm-up run of
each so that both read the same compile cache; the median of N), the HTML's size, and in a
real headless chromium (network off) the time from navigation to the page's script having
run (``performance.now()`` at its end) and to the load event.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]

from headless_browser import Browser, chromium_path  # noqa: E402
from synthetic_project import write_project  # noqa: E402


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--gpu", default="h100,rtx4090")
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="roofline-chart-bench-"))
    write_project(tmp / "synthetic500")
    cli = [sys.executable, "-m", "roofline_lsp"]
    pages: list[tuple[str, Path]] = []
    print(f"{'project':<14} {'check s':>8} {'report s':>9} {'extra s':>8} {'HTML':>9}")
    for label, path in (("examples", ROOT / "examples"), ("synthetic500", tmp / "synthetic500")):
        html = tmp / f"{label}.html"
        check = [*cli, "check", str(path), "--gpu", opts.gpu]
        report = [*cli, "report", str(path), "--gpu", opts.gpu, "--html", str(html)]
        timed(check), timed(report)  # warm the compile cache for both
        checks: list[float] = []
        reports: list[float] = []
        for _ in range(opts.runs):
            checks.append(timed(check))
            reports.append(timed(report))
        c, r = statistics.median(checks), statistics.median(reports)
        size = html.stat().st_size
        print(f"{label:<14} {c:8.2f} {r:9.2f} {r - c:8.2f} {size / 1e6:7.2f}MB")
        pages.append((label, html))
    exe = chromium_path()
    if exe is None:
        print("chromium not found: no render times (bash .ci/install-browser.sh)")
        return 0
    browser = Browser(exe, 1240, 1000)
    try:
        print(f"\n{'project':<14} {'script done ms':>15} {'load event ms':>14}  (median of runs)")
        for label, html in pages:
            script: list[float] = []
            load: list[float] = []
            for _ in range(opts.runs):
                t = time.perf_counter()
                browser.open(html.as_uri())
                load.append((time.perf_counter() - t) * 1000)
                script.append(float(browser.evaluate("document.body.dataset.renderMs")))
                browser.open("about:blank")
            print(f"{label:<14} {statistics.median(script):15.0f} {statistics.median(load):14.0f}")
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
