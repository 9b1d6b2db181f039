"""``check`` at repository scale: MB/s and kernels/s cold with ``-j 1`` and ``-j N``, the warm
re-run, peak memory, and with the default counts how many compiles a warm re-run makes.

    python benchmarks/check_scale.py [TREE] [--jobs N] [--counts-files N] [--gpu h100]

TREE defaults to the dev set's sources (``../shared/eval/dev/sources``). Each run is
``roofline-lsp check TREE --counts source --format json`` in its own process, as a user runs
it: cold ones with an empty ``--cache-dir``, the warm one again over the same cache. Peak RSS
is the largest sum of the resident memory of the run's processes (the main one and its
workers), sampled every 20 ms. The JSON of every run must be the same.

``--counts-files N`` (0 to skip): the first N CUDA files of TREE with the default counts
(``auto``: nvcc), cold then warm, through an nvcc that logs each compile: the warm run must
make none. Other work on the machine slows every figure: the load average is printed before
and after, and for each run the CPU seconds other processes used meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TREE = ROOT.parent / "shared" / "eval" / "dev" / "sources"

sys.path.insert(0, str(ROOT / "server"))
from roofline_lsp.engine.file_run import default_jobs  # noqa: E402
from roofline_lsp.engine.files import collect_files  # noqa: E402


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants (``/proc/PID/task/*/children``)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


def _busy() -> float:
    """CPU seconds the machine has spent busy (all cores, all processes) since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


PAGE = os.sysconf("SC_PAGE_SIZE")
OTHERS: list[float] = []  # per run: CPU seconds other processes used meanwhile


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes, all processes) of ``cmd``; what the rest of the
    machine used meanwhile goes to ``OTHERS``."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: a chatty run never blocks
        busy0 = _busy()
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        peak = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.05)
        seconds = time.perf_counter() - t0
        ours = usage.ru_utime + usage.ru_stime
        OTHERS.append(max(_busy() - busy0 - ours, 0.0))
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(cmd)} failed ({code}): {text.strip()[-500:]}")
    problems = [ln for ln in text.splitlines() if "internal error" in ln]
    if problems:
        sys.exit(f"{len(problems)} file(s) failed, e.g. {problems[0]}")
    return seconds, peak


def check_cmd(paths: list[str], *extra: str) -> list[str]:
    return [sys.executable, "-m", "roofline_lsp", "check", *paths, "--format", "json", *extra]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", nargs="?", default=str(DEFAULT_TREE))
    ap.add_argument("--jobs", "-j", type=int, default=default_jobs())
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--counts-files", type=int, default=20)
    ns = ap.parse_args()
    files, _ = collect_files([ns.tree])
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    print(f"tree: {ns.tree}: {len(files)} files, {mb:.2f} MB; {ns.jobs} jobs")
    print(f"load average before: {load()}")
    with tempfile.TemporaryDirectory(prefix="check-scale-") as tmp:
        outs: dict[str, str] = {}
        figures: dict[str, tuple[float, int]] = {}
        for name, jobs, cache in (
            ("cold -j 1", 1, "c1"),
            (f"cold -j {ns.jobs}", ns.jobs, "cn"),
            (f"warm -j {ns.jobs}", ns.jobs, "cn"),
        ):
            out = os.path.join(tmp, f"{cache}-{len(outs)}.json")
            cmd = check_cmd(
                [ns.tree],
                "--counts",
                "source",
                "--gpu",
                ns.gpu,
                "-j",
                str(jobs),
                "--cache-dir",
                os.path.join(tmp, cache),
                "-o",
                out,
            )
            figures[name] = timed(cmd)
            outs[name] = Path(out).read_text()
            print(f"  {name}: other processes used {OTHERS[-1]:.1f} CPU s meanwhile")
        kernels = len(json.loads(outs["cold -j 1"]))
        same = len(set(outs.values())) == 1
        print(f"kernels: {kernels}; same JSON in every run: {'yes' if same else 'NO'}")
        cold1 = figures["cold -j 1"][0]
        for name, (s, rss) in figures.items():
            print(
                f"{name:>10}: {s:6.2f} s  {mb / s:5.2f} MB/s  {kernels / s:6.1f} kernels/s  "
                f"peak RSS {rss / 1e6:5.0f} MB  ({s / cold1:.2f}x the cold -j 1 time)"
            )
        coldn = figures[f"cold -j {ns.jobs}"][0]
        print(
            f"speed-up -j {ns.jobs} over -j 1: {cold1 / coldn:.2f}x; "
            f"warm / cold -j {ns.jobs}: {figures[f'warm -j {ns.jobs}'][0] / coldn:.0%}"
        )
        if ns.counts_files > 0:
            compiles(ns, files, tmp)
    print(f"load average after: {load()}")


def compiles(ns: argparse.Namespace, files: list[str], tmp: str) -> None:
    """Cold then warm with the default counts over the first CUDA files, counting compiles."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("default counts: skipped (no nvcc)")
        return
    cuda = [f for f in files if f.endswith(".cu")][: ns.counts_files]
    log = os.path.join(tmp, "compiles.log")
    shim = os.path.join(tmp, "nvcc")
    Path(shim).write_text(
        "#!/bin/sh\n"
        f'case "$*" in *--version*|*--list-gpu-arch*) ;; *) echo x >> {log} ;; esac\n'
        f'exec {nvcc} "$@"\n'
    )
    os.chmod(shim, os.stat(shim).st_mode | stat.S_IXUSR)
    cache = os.path.join(tmp, "counts")
    for name in ("cold", "warm"):
        if os.path.exists(log):
            os.remove(log)
        cmd = check_cmd(
            cuda,
            "--gpu",
            ns.gpu,
            "-j",
            str(ns.jobs),
            "--nvcc",
            shim,
            "--cache-dir",
            cache,
            "-o",
            os.path.join(tmp, f"counts-{name}.json"),
        )
        s, rss = timed(cmd)
        n = len(Path(log).read_text().splitlines()) if os.path.exists(log) else 0
        print(
            f"default counts, {len(cuda)} .cu files, {name}: {s:6.2f} s, {n} nvcc compiles, "
            f"peak RSS {rss / 1e6:.0f} MB"
        )


if __name__ == "__main__":
    main()
