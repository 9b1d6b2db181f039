"""Detection throughput over a folder of sources (default: ../shared/eval/dev/sources).

    python benchmarks/detect_speed.py [FOLDER]

Prints files/s, MB/s and kernels found; every file is parsed and detected (header includes
followed) and any exception is reported as a failure, never hidden.
"""

from __future__ import annotations

import os
import sys
import time

from roofline_lsp.detect.kernels import clear_header_cache, detect
from roofline_lsp.engine.files import collect_files, read_source


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    folder = (
        sys.argv[1]
        if len(sys.argv) > 1
        else os.path.join(here, "..", "..", "shared", "eval", "dev", "sources")
    )
    if not os.path.isdir(folder):
        print(f"{folder}: not found (get the eval sources first, see ../shared/eval/README.md)")
        return 2
    files, _ = collect_files([folder])
    blobs = []
    for f in files:
        data, _problem = read_source(f, 20_000_000)
        if data is not None:
            blobs.append((f, data))
    total = sum(len(b) for _, b in blobs)
    for run in ("cold", "warm"):
        if run == "cold":
            clear_header_cache()
        failures = kernels = slowest = 0
        slow_file = ""
        start = time.perf_counter()
        for f, data in blobs:
            t0 = time.perf_counter()
            try:
                kernels += len(detect(data, f).kernels)
            except Exception as e:  # report, do not hide
                failures += 1
                print(f"FAIL {f}: {type(e).__name__}: {e}")
            dt = time.perf_counter() - t0
            if dt > slowest:
                slowest, slow_file = dt, f
        secs = time.perf_counter() - start
        print(
            f"{run}: {len(blobs)} files, {total / 1e6:.1f} MB in {secs:.2f} s: "
            f"{len(blobs) / secs:.0f} files/s, {total / 1e6 / secs:.2f} MB/s, "
            f"{kernels} kernels, {failures} failures, slowest {slowest * 1000:.0f} ms "
            f"({os.path.relpath(slow_file, folder)})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
