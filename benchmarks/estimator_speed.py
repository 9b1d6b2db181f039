"""Static estimator speed: time to analyse one kernel (detection excluded).

    python benchmarks/estimator_speed.py [DATASET]   # default ../shared/eval/dev

Every kernel of the dataset's ``kernels.jsonl`` (with its launch and program arguments) is
estimated twice: "cold" (first time: sibling files parsed, host scopes scanned) and "warm"
(caches filled, as in the editor after the first analysis). Prints the median, 90th
percentile and maximum per kernel, in CPU time of this process. Without the dataset it
times the fixtures under tests/fixtures/estimator.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from roofline_lsp.detect.kernels import detect
from roofline_lsp.engine.refinement import kernel_verdict
from roofline_lsp.estimate.roofline import Inputs
from roofline_lsp.evaluation.dataset import load_rows, rows_by_file
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.kernel import Detection, Kernel


def _jobs(dataset: str) -> list[tuple[Kernel, Detection, Inputs, str]]:
    """Every row's kernel with the row's launch and program arguments (as ``eval`` runs)."""
    jobs = []
    for rel, rows in rows_by_file(load_rows(dataset)).items():
        src_path = os.path.join(dataset, "sources", rel)
        with open(src_path, "rb") as f:
            det = detect(f.read(), src_path)
        for row in rows:
            k = next((k for k in det.kernels if k.line == row.data["line"]), None)
            if k is not None:
                jobs.append((k, det, row.inputs(), row.id))
    return jobs


def _fixture_jobs() -> list[tuple[Kernel, Detection, Inputs, str]]:
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
    folder = os.path.join(here, "estimator")
    jobs = []
    for name in sorted(os.listdir(folder)):
        p = os.path.join(folder, name)
        with open(p, "rb") as f:
            det = detect(f.read(), p)
        for k in det.kernels:
            jobs.append((k, det, Inputs(args="1048576"), f"{name}:{k.name}"))
    return jobs


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    dataset = (
        sys.argv[1]
        if len(sys.argv) > 1
        else os.path.join(here, "..", "..", "shared", "eval", "dev")
    )
    config = Config(gpu="rtx3080", counts="source")
    gpu = load_registry().get(config.gpu)
    if os.path.isdir(os.path.join(dataset, "sources")):
        jobs = _jobs(dataset)
        what = f"{len(jobs)} kernels of {os.path.normpath(dataset)}"
    else:
        jobs = _fixture_jobs()
        what = f"{len(jobs)} fixture kernels (dataset sources not found)"
    print(f"estimating {what} on {gpu.name}")
    for run in ("cold", "warm"):
        times = []
        slowest = ("", 0.0)
        for k, det, inputs, name in jobs:
            t0 = time.process_time()
            kernel_verdict(k, det, gpu, config, inputs=inputs)  # what every verdict comes from
            dt = time.process_time() - t0
            times.append(dt)
            if dt > slowest[1]:
                slowest = (name, dt)
        times.sort()
        p90 = times[int(0.9 * (len(times) - 1))]
        print(
            f"{run}: median {statistics.median(times) * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms, "
            f"max {slowest[1] * 1000:.0f} ms ({slowest[0]}), total {sum(times):.2f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
