"""Show how the static estimator's calibrated constants fit the dev set.

    python scripts/calibration.py [--dataset ../shared/eval/dev] [--only NAME] [--quick]

For each constant of ``roofline.Calibration`` it re-runs the estimator over the dataset with
a few values around the chosen one and prints, separately for the programs whose benchmark
name hashes to an even bucket (the half the constants were chosen on) and the odd bucket
(held out):

* the balanced accuracy of the compute/bandwidth verdicts, and
* the count fit the constant is about: median |log10(estimated / measured)| of integer
  operations (loop defaults, OpenMP runtime costs), of DRAM bytes (cache constants) or of
  the launch time (latency constants), over the rows where the measurement is positive,
  and the share of those rows within 2x.

The chosen value is marked ``*``. Labels and measurements are used here only, to show the
fit; the estimator never reads them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import zlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.kernel_estimate import KernelEstimate
from roofline_lsp.estimate.roofline import CALIBRATION, Calibration, Inputs, analyze
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.verdict import classify_bound

# constant -> (values tried, measured quantity it is fitted to)
SWEEPS: dict[str, tuple[tuple[float, ...], str]] = {
    "default_trips": ((8, 16, 32, 64), "int"),
    "default_while": ((4, 8, 16, 32), "int"),
    "nested_default": ((1, 2, 4, 8), "int"),
    "omp_thread_ints": ((0, 15, 30, 60), "int_omp"),
    "omp_iteration_ints": ((0, 5, 15, 30), "int_omp"),
    "capped_trips": ((2, 4, 8, 16), "int_omp"),
    "capacity_miss": ((0.0, 0.02, 0.05, 0.2), "bytes"),
    "resident_write_fraction": ((0.1, 0.25, 0.5, 1.0), "bytes"),
    "launch_floor": ((0, 2048, 4096, 8192), "bytes"),
    "dependent_cycles": ((8, 16, 32, 64), "bytes"),
    "load_cycles": ((0, 100, 200, 400), "bytes"),
    "chain_exponent": ((0.8, 0.85, 0.95, 1.0), "seconds"),
    "chain_pivot": ((3.0e4, 3.0e5), "seconds"),
    "warp_cycles": ((0, 6, 11, 22), "seconds"),
    "launch_seconds": ((1.0e-6, 2.0e-6, 3.0e-6, 4.0e-6), "seconds"),
}


def bucket(row: dict[str, Any]) -> int:
    base = str(row["program"]).rsplit("-", 1)[0]  # the CUDA and OpenMP ports together
    return zlib.crc32(base.encode()) % 2


def load(dataset: str) -> list[tuple[dict[str, Any], Any, Any, Inputs]]:
    with open(os.path.join(dataset, "kernels.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(x) for x in f if x.strip()]
    by_file: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_file.setdefault(r["file"], []).append(r)
    jobs = []
    for rel, rs in by_file.items():
        path = os.path.join(dataset, "sources", rel)
        with open(path, "rb") as f:
            det = detect(f.read(), path)
        for r in rs:
            k = next((k for k in det.kernels if k.line == r["line"]), None)
            if k is not None:
                inputs = Inputs(
                    block=tuple(r["block"]), grid=tuple(r["grid"]), args=r["exe_args"] or None
                )
                jobs.append((r, k, det, inputs))
    return jobs


def balanced_accuracy(pairs: list[tuple[str, str]]) -> float:
    recalls = []
    for label in ("compute", "bandwidth"):
        got = [p for lab, p in pairs if lab == label]
        if got:
            recalls.append(sum(p == label for p in got) / len(got))
    return sum(recalls) / len(recalls) if recalls else float("nan")


QUANTITY: dict[str, tuple[Callable[[KernelEstimate], float], str, str | None]] = {
    "int": (lambda a: a.totals["int"], "int_ops", None),
    "int_omp": (lambda a: a.totals["int"], "int_ops", "omp"),
    "bytes": (lambda a: a.memory.dram_bytes, "traffic_bytes", None),
    "seconds": (lambda a: a.time.seconds * 1e9 if a.time else 0.0, "time_ns", None),
}


def evaluate(
    jobs: list, gpu: Any, cal: Calibration, quantity: str
) -> dict[int, tuple[float, float, float]]:  # type: ignore[type-arg]
    est, measured_key, language = QUANTITY[quantity]
    ridge = gpu.ridges()
    out: dict[int, tuple[float, float, float]] = {}
    per_bucket: dict[int, tuple[list[tuple[str, str]], list[float]]] = {0: ([], []), 1: ([], [])}
    for r, k, det, inputs in jobs:
        a = analyze(k, det, gpu, inputs, None, cal)
        ai = {p: (None if v is None else min(v, 1e9)) for p, v in a.ai.items()}
        pairs, errs = per_bucket[bucket(r)]
        pairs.append((r["label"], classify_bound(ai, ridge)[0]))
        m = (r.get("measured") or {}).get(measured_key) or 0.0
        x = est(a)
        if m > 0 and x > 0 and (language is None or r["language"] == language):
            errs.append(abs(math.log10(x / m)))
    for b, (pairs, errs) in per_bucket.items():
        within = sum(e <= math.log10(2) for e in errs) / len(errs) if errs else float("nan")
        out[b] = (
            balanced_accuracy(pairs),
            statistics.median(errs) if errs else float("nan"),
            within,
        )
    return out


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default=os.path.join(here, "..", "..", "shared", "eval", "dev"))
    ap.add_argument("--gpu", default="rtx3080")
    ap.add_argument("--only", help="one constant")
    ap.add_argument("--quick", action="store_true", help="only the chosen values")
    ns = ap.parse_args()
    if not os.path.isdir(os.path.join(ns.dataset, "sources")):
        print(f"{ns.dataset}: no kernels.jsonl + sources/ (see ../shared/eval/README.md)")
        return 2
    gpu = load_registry().get(ns.gpu)
    jobs = load(ns.dataset)
    even = sum(bucket(r) == 0 for r, *_ in jobs)
    print(
        f"{len(jobs)} kernels: {even} in even-bucket programs (fit), "
        f"{len(jobs) - even} odd (held out)"
    )
    base = evaluate(jobs, gpu, CALIBRATION, "int")
    print(f"chosen constants: balanced accuracy even {base[0][0]:.4f}, odd {base[1][0]:.4f}\n")
    if ns.quick:
        return 0
    for name, (values, quantity) in SWEEPS.items():
        if ns.only and name != ns.only:
            continue
        chosen = getattr(CALIBRATION, name)
        print(f"{name} (fit to {quantity}: median |log10 est/measured|, share within 2x)")
        print(
            f"  {'value':>10}  {'BA even':>8} {'BA odd':>8}  {'err even':>8} {'err odd':>8}"
            f"  {'2x even':>8} {'2x odd':>8}"
        )
        for v in sorted(set(values) | {chosen}):
            res = evaluate(jobs, gpu, replace(CALIBRATION, **{name: v}), quantity)
            mark = "*" if v == chosen else " "
            print(
                f"{mark} {v:>10g}  {res[0][0]:8.4f} {res[1][0]:8.4f}  "
                f"{res[0][1]:8.3f} {res[1][1]:8.3f}  {res[0][2]:8.3f} {res[1][2]:8.3f}",
                flush=True,
            )
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
