"""Compare two ``roofline-lsp eval --json`` runs of one dataset, before and after a change.

    python scripts/eval_compare.py BEFORE.json AFTER.json [--rows]

Prints each run's headline figures (balanced accuracy for all rows, CUDA, OpenMP and the
paper's balanced subset; bandwidth-bound kernels called compute; launch totals within 2x of
the measured ones; the top confidence band), then what moved between them: verdicts that got
right or wrong, and per component the rows that came within 2x or left it and those that moved
closer or farther, split by whether the verdict assumed a value. ``--rows`` lists the rows that
moved, for studying a change on ``dev``; it refuses a ``val`` run, whose errors the accuracy
protocol keeps unlisted (README, "How accurate is it?"), and a run that does not name its
dataset (``eval --json`` before it recorded one).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Any

from roofline_lsp.evaluation import attribution
from roofline_lsp.evaluation.attribution import WITHIN_2X

# eval's components but the launch's threads (OpenMP's are iterations, not a count to match)
COMPONENTS = tuple(c for c in attribution.COMPONENTS if c != "threads")
# (a move of less than 0.005 in log10 is not reported: the ratios print with 2 decimals)


def load(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    if "predictions" not in data:
        raise SystemExit(f"{path}: not an `eval --json` output (no predictions)")
    return data


def headline(d: dict[str, Any]) -> str:
    def bal(block: dict[str, Any] | None) -> str:
        v = (block or {}).get("balanced_accuracy")
        return "-" if v is None else f"{v:.3f}"

    lang = d.get("by_language", {})
    within = " / ".join(
        f"{100 * (d['attribution'][c]['within_2x'] or 0):.1f}" for c in COMPONENTS[:4]
    )
    high = d.get("confidence_bands", {}).get("high", {})
    misses = d.get("dram_misses")  # (absent from the JSON of older runs)
    under = (
        f"; DRAM under 2x: reuse removed {misses['under_reuse_removed']}, unseen "
        f"{misses['under_unseen']}"
        if misses
        else ""
    )
    return (
        f"balanced {bal(d)} (CUDA {bal(lang.get('cuda'))}, OpenMP {bal(lang.get('omp'))}, "
        f"subset {bal(d.get('balanced_subset'))}); bandwidth called compute "
        f"{100 * (d.get('bandwidth_called_compute') or 0):.1f}%; within 2x FP32 / FP64 / int / "
        f"DRAM {within}; top band {100 * (high.get('accuracy') or 0):.0f}% of "
        f"{high.get('kernels', 0)}{under}"
    )


def ratio(p: dict[str, Any], component: str) -> float | None:
    r: float | None = p.get("attribution", {}).get(component, {}).get("log10_ratio")
    return r


def moves(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(row id, what moved, detail) for every row whose verdict or launch totals changed."""
    old = {p["id"]: p for p in before["predictions"]}
    out: list[tuple[str, str, str]] = []
    for p in after["predictions"]:
        q = old.get(p["id"])
        if q is None:
            continue
        if q.get("predicted") != p.get("predicted"):
            right = p.get("predicted") == p.get("label")
            out.append((p["id"], "verdict right" if right else "verdict wrong", ""))
        for c in COMPONENTS:
            x, y = ratio(q, c), ratio(p, c)
            if x is None or y is None or abs(y - x) < 0.005:
                continue
            kind = "closer" if abs(y) < abs(x) else "farther"
            if (abs(x) <= WITHIN_2X) != (abs(y) <= WITHIN_2X):
                kind = "into 2x" if abs(y) <= WITHIN_2X else "out of 2x"
            out.append((p["id"], f"{c} {kind}", f"{x:+.2f} -> {y:+.2f}"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rows", action="store_true", help="list the rows that moved (not val)")
    ns = ap.parse_args(argv)
    before, after = load(ns.before), load(ns.after)
    names = {before.get("dataset"), after.get("dataset")}
    if len(names) > 1:
        print(f"warning: the runs are of different datasets: {sorted(map(str, names))}")
    print(f"before: {headline(before)}")
    print(f"after:  {headline(after)}")
    moved = moves(before, after)
    assumed = {p["id"]: bool(p.get("assumed")) for p in after["predictions"]}
    tally: dict[tuple[str, bool], int] = {}
    for rid, what, _ in moved:
        key = (what, assumed.get(rid, False))
        tally[key] = tally.get(key, 0) + 1
    for (what, was_assumed), n in sorted(tally.items()):
        print(f"  {n:4d} {what}{' (assumed)' if was_assumed else ''}")
    if ns.rows:
        if None in names or any("val" in str(n) for n in names):
            print(
                "--rows: only for a run that names its dataset, and not val (aggregate"
                " figures only); study the rows on dev"
            )
            return 2
        for rid, what, detail in moved:
            print(f"  {rid}: {what} {detail}")
    return 0


if __name__ == "__main__":
    if hasattr(signal, "SIGPIPE"):  # piped into ``head``: stop quietly when it has read enough
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
