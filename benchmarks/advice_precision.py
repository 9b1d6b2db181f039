"""Precision and recall of the advice rules on the hand-written fixtures of
``tests/fixtures/advice`` (each rule's textbook positives and near misses), through the engine's
analysis with source counts, and diagnostics per kernel on the latency benchmark's large file.

A fixture line ending in ``// expect RLnnn`` must get that diagnostic; any other diagnostic is
a false positive. Prints one line per rule, the overall figures, and the median number of
diagnostics per kernel on the generated large CUDA file of ``lsp_latency.py``.

    python benchmarks/advice_precision.py
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from lsp_latency import generate  # noqa: E402

from roofline_lsp.advice.advise import advise  # noqa: E402
from roofline_lsp.engine.analysis import analyze_file  # noqa: E402
from roofline_lsp.model.gpus import load_registry  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "advice"
# kernels written after the rules were final, not asserted by tests: a check on code the
# rules were not written for. Its first run (precision 1.00, recall 0.83) exposed one bug, a
# bounds check `i < n` taken for a lane branch, fixed in lanes.py; since then it is seen code.
HOLDOUT = ROOT / "benchmarks" / "advice_holdout"
EXPECT = re.compile(r"//\s*expect\s+((?:RL\d{3}[ ,]*)+)")
GPU_LINE = re.compile(r"//\s*gpu:\s*(\S+)")


def expectations(text: str) -> set[tuple[int, str]]:
    """(1-based line, rule) of every ``// expect RLnnn`` comment."""
    out = set()
    for i, line in enumerate(text.splitlines(), 1):
        m = EXPECT.search(line)
        if m:
            out.update((i, code) for code in re.findall(r"RL\d{3}", m.group(1)))
    return out


def found(path: Path) -> set[tuple[int, str]]:
    """(1-based line, rule) of every diagnostic the engine gives ``path``."""
    src = path.read_bytes()
    m = GPU_LINE.match(src.decode())
    gpu = load_registry().get(m.group(1) if m else "h100")
    report = analyze_file(src, str(path), (gpu,))
    return {(src.count(b"\n", 0, a.start) + 1, a.code) for a in advise(report, gpu)}


def score(paths: list[Path], title: str) -> None:
    """Print the misses, false positives and precision/recall per rule of ``paths``."""
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    print(title)
    for path in paths:
        want = expectations(path.read_text())
        got = found(path)
        for _, code in got & want:
            tp[code] += 1
        for line, code in sorted(got - want):
            fp[code] += 1
            print(f"  false positive {path.name}:{line} {code}")
        for line, code in sorted(want - got):
            fn[code] += 1
            print(f"  missed         {path.name}:{line} {code}")
    print(f"{'rule':6} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>7}")
    for code in sorted(set(tp) | set(fp) | set(fn)):
        print(_row(code, tp[code], fp[code], fn[code]))
    print(_row("all", sum(tp.values()), sum(fp.values()), sum(fn.values())))
    print()


def main() -> int:
    score(sorted(FIXTURES.glob("rl*")), "fixtures (tests/fixtures/advice, asserted by tests):")
    score(
        sorted(HOLDOUT.glob("*.c*")),
        "held out (benchmarks/advice_holdout, written after the rules):",
    )
    gpu = load_registry().get("h100")
    text = generate(5200)
    report = analyze_file(text.encode(), "big.cu", (gpu,))
    per_kernel = Counter(a.kernel for a in advise(report, gpu))
    counts = [per_kernel.get(kr.kernel.name, 0) for kr in report.kernels]
    print(
        f"large file (lsp_latency.py, 5200 lines): {len(counts)} kernels, "
        f"{sum(counts)} diagnostics, median {statistics.median(counts):g} per kernel, "
        f"max {max(counts)}"
    )
    return 0


def _row(code: str, tp: int, fp: int, fn: int) -> str:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return f"{code:6} {tp:4} {fp:4} {fn:4} {precision:10.2f} {recall:7.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
