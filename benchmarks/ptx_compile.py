"""Compile a folder's CUDA files to PTX (pool of 2), cold then warm (cached), and print figures.

    python benchmarks/ptx_compile.py                       # the eval set's CUDA files
    python benchmarks/ptx_compile.py --folder some/dir     # every .cu under a folder
    python benchmarks/ptx_compile.py --lang omp            # the OpenMP files, via clang
    python benchmarks/ptx_compile.py --lang both

With the eval set (``--dataset``, default ``../shared/eval/dev/kernels.jsonl`` beside the
checkout), the files are those of its rows of the chosen language, headers compiled through a
``.cu`` that includes them, and the script also reports how many of the set's kernels are
present in the PTX (a template never instantiated has none). The cold run uses a fresh cache
folder, the warm run the same folder again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from roofline_lsp.compiler.compile_jobs import (  # noqa: E402
    CACHE_NAMESPACE,
    PtxFailure,
    PtxResult,
    compile_omp_ptx_async,
    compile_ptx_async,
)
from roofline_lsp.compiler.compile_units import translation_unit_for  # noqa: E402
from roofline_lsp.compiler.demangle import omp_region  # noqa: E402
from roofline_lsp.compiler.ptx_kernels import find_kernels  # noqa: E402
from roofline_lsp.compiler.ptx_parser import parse_ptx  # noqa: E402
from roofline_lsp.compiler.toolchain import find_nvcc, find_offload_clang, nvcc_version  # noqa: E402
from roofline_lsp.store.cache import ResultCache  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = ROOT.parent / "shared" / "eval" / "dev" / "kernels.jsonl"


def _targets(
    args: argparse.Namespace,
) -> tuple[list[str], dict[str, list[str]], dict[str, str]]:
    """(translation units, TU -> kernel names expected in it, TU -> language)."""
    expected: dict[str, list[str]] = {}
    kinds: dict[str, str] = {}
    if args.folder:
        files = sorted(str(p) for p in Path(args.folder).rglob("*.cu"))
        return files, expected, dict.fromkeys(files, "cuda")
    sources = Path(args.dataset).parent / "sources"
    text = Path(args.dataset).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    langs = {"cuda", "omp"} if args.lang == "both" else {args.lang}
    tus: list[str] = []
    for r in rows:
        if r["language"] not in langs:
            continue
        path = str(sources / r["file"])
        tu = translation_unit_for(path) or path
        if tu not in expected:
            tus.append(tu)
            kinds[tu] = r["language"]
        name = r["kernel"] if r["language"] == "cuda" else f"@{r['line']}"
        expected.setdefault(tu, []).append(name)
    return tus, expected, kinds


async def _run(
    tus: list[str],
    kinds: dict[str, str],
    nvcc: str,
    clang: str | None,
    arch: str,
    cache: ResultCache,
    jobs: int,
) -> tuple[list[tuple[str, PtxResult | PtxFailure, float]], float]:
    sem = asyncio.Semaphore(jobs)

    async def one(tu: str) -> tuple[str, PtxResult | PtxFailure, float]:
        t0 = time.perf_counter()
        if kinds.get(tu) != "omp" or clang is None:
            res = await compile_ptx_async(tu, None, nvcc, arch, cache=cache, semaphore=sem)
        else:
            res = await compile_omp_ptx_async(
                tu, None, clang, arch, nvcc=nvcc, cache=cache, semaphore=sem
            )
        return tu, res, time.perf_counter() - t0

    t0 = time.perf_counter()
    out = await asyncio.gather(*(one(tu) for tu in tus))
    return list(out), time.perf_counter() - t0


def _found(res: PtxResult, names: list[str]) -> tuple[int, int]:
    module = parse_ptx(res.ptx)
    hit = 0
    for name in names:
        if name.startswith("@"):
            line = int(name[1:])
            hit += any(
                (r := omp_region(k.name)) is not None and r[1] == line for k in module.kernels
            )
        else:
            hit += bool(find_kernels(module, name))
    return hit, len(names)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=str(DEFAULT_DATASET))
    ap.add_argument("--folder", help="compile every .cu under this folder instead")
    ap.add_argument("--arch", default="sm_86")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--lang", choices=("cuda", "omp", "both"), default="cuda")
    ap.add_argument("--limit", type=int, default=0, help="only the first N files")
    ap.add_argument("--failures", type=int, default=8, help="failure reasons to show")
    args = ap.parse_args()

    nvcc = find_nvcc()
    if nvcc is None:
        print("nvcc not found: nothing to measure")
        return 1
    want_omp = args.lang != "cuda"
    clang = find_offload_clang() if want_omp else None
    if want_omp and clang is None:
        print("no clang with the OpenMP NVPTX runtime: OpenMP files skipped")
    if not args.folder and not Path(args.dataset).is_file():
        print(f"{args.dataset} not found; pass --folder")
        return 1
    tus, expected, kinds = _targets(args)
    if clang is None:
        tus = [t for t in tus if kinds.get(t) != "omp"]
    if args.limit:
        tus = tus[: args.limit]
    print(f"nvcc {nvcc_version(nvcc)} ({nvcc}), arch {args.arch}, pool {args.jobs}")
    if clang:
        print(f"clang for OpenMP: {clang}")
    print(f"translation units: {len(tus)}")

    with tempfile.TemporaryDirectory(prefix="ptx-bench-cache-") as cache_dir:
        cache = ResultCache(cache_dir, namespace=CACHE_NAMESPACE, size_limit_mb=2048)
        for label in ("cold", "warm"):
            results, wall = asyncio.run(_run(tus, kinds, nvcc, clang, args.arch, cache, args.jobs))
            ok = [r for r in results if isinstance(r[1], PtxResult)]
            times = [r[1].seconds for r in ok if not r[1].cached] or [r[2] for r in results]
            print(
                f"{label}: {len(ok)}/{len(results)} compiled "
                f"({100.0 * len(ok) / max(1, len(results)):.1f}%), wall {wall:.1f} s, "
                f"per file median {statistics.median(times):.2f} s, p90 {_pct(times, 0.9):.2f} s"
                + (f", cached {sum(1 for r in ok if r[1].cached)}" if label == "warm" else "")
            )
            if label == "cold":
                reasons = Counter(
                    r[1].reason.split(": ", 1)[-1][:110]
                    for r in results
                    if isinstance(r[1], PtxFailure)
                )
                for reason, count in reasons.most_common(args.failures):
                    print(f"  failure x{count}: {reason}")
                if expected:
                    t0 = time.perf_counter()
                    hit = total = 0
                    for tu, res, _ in results:
                        names = expected.get(tu, [])
                        if isinstance(res, PtxResult):
                            h, t = _found(res, names)
                            hit, total = hit + h, total + t
                        else:
                            total += len(names)
                    parse = time.perf_counter() - t0
                    print(
                        f"  eval kernels present in the PTX: {hit}/{total} "
                        f"({100.0 * hit / max(1, total):.1f}%); parse of all PTX {parse:.1f} s"
                    )
        cache.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
