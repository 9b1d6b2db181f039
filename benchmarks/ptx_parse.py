"""Time ``parse_ptx`` on large PTX written here (no compiler needed), best of a few runs:

- ``fixtures``: the checked-in fixture PTX repeated to about 1 MB (ordinary compiler output);
- ``chain``: one function of 20,000 two-instruction blocks, each branching to the next (a deep
  dominator tree: a dominance test that walked up it would cost O(n) per edge);
- ``latches``: one loop header with 20,000 conditional back edges.

    python benchmarks/ptx_parse.py [--blocks 20000] [--runs 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from roofline_lsp.compiler.ptx_parser import parse_ptx  # noqa: E402

FIX = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ptx"
HEAD = ".version 8.0\n.target sm_86\n.address_size 64\n.visible .entry big()\n{\n"


def chain(n: int) -> str:
    body = "".join(
        f"$L{i}:\n\tsetp.lt.s32 %p1, %r1, {i};\n\t@%p1 bra $L{i + 1};\n" for i in range(n)
    )
    return HEAD + body + f"$L{n}:\n\tret;\n}}\n"


def latches(n: int) -> str:
    body = "".join(f"\tsetp.lt.s32 %p1, %r1, {i};\n\t@%p1 bra $H;\n" for i in range(n))
    return HEAD + "$H:\n\tadd.s32 %r1, %r1, 1;\n" + body + "\tret;\n}\n"


def fixtures(size: int = 1 << 20) -> str:
    texts = [p.read_text() for p in sorted(FIX.glob("*.ptx"))]
    out: list[str] = []
    total = 0
    while total < size:
        for t in texts:
            out.append(t)
            total += len(t)
    return "".join(out)


def best(text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        parse_ptx(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    for name, text in (
        ("fixtures", fixtures()),
        ("chain", chain(args.blocks)),
        ("latches", latches(args.blocks)),
    ):
        secs = best(text, args.runs)
        size = len(text) / 1e6
        print(f"{name:9s} {size:5.2f} MB  parse {secs * 1000:7.0f} ms (best of {args.runs})")


if __name__ == "__main__":
    main()
