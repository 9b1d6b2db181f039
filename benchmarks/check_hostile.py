"""``roofline-lsp check`` on hostile files, one process per file: wall and CPU seconds, exit
code and what stderr said (a FIFO, a socket, a link to /dev/zero, a 64 MB file, binary bytes,
invalid UTF-8, 3,000 nested loops and blocks, a 3 MB line, 3.9 MB of kernels, 1,000 kernels
whose braces split across ``#if`` branches).

    python benchmarks/check_hostile.py [--counts source|auto] [--file-timeout S] [--only NAME]

The files are generated (``tests/hostile_files.py``) in a temporary folder, each beside a
small good file, so that sibling reads are exercised too."""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import hostile_files as hostile  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="source")
    ap.add_argument("--file-timeout", default=None)
    ap.add_argument("--only", default=None, help="only the file whose name contains this")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "hostile"
        hostile.write_all(root)
        print(f"{'file':<20} {'wall s':>7} {'cpu s':>7} {'exit':>4}  stderr")
        for name in sorted(os.listdir(root)):
            if name == "ok.cu" or (a.only and a.only not in name):
                continue
            folder = Path(tmp) / name.replace(".", "_")  # the file beside a good one
            folder.mkdir()
            os.rename(root / name, folder / name)
            hostile.write_ok(folder / "ok.cu")
            cmd = [sys.executable, "-m", "roofline_lsp", "check", str(folder)]
            cmd += ["--counts", a.counts, "--no-cache", "--format", "json"]
            if a.file_timeout is not None:
                cmd += ["--file-timeout", a.file_timeout]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            err = " | ".join(ln.replace(str(folder) + os.sep, "") for ln in r.stderr.splitlines())
            print(f"{name:<20} {wall:7.2f} {cpu:7.2f} {r.returncode:>4}  {err[:150]}")


if __name__ == "__main__":
    main()
