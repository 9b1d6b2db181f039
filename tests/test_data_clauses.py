"""Data-clause advice of offload regions (RL011, RL012) and its fixes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from advice_fixtures import RTX, apply, has_error, report, run, where

from roofline_lsp.advice.advise import advise


def test_map_tofrom_on_read_only_data_and_mapping_in_a_host_loop() -> None:
    src, adv = run("offload.cpp")
    maps = [a for a in adv if a.code == "RL011"]
    assert len(maps) == 1 and "`in` is only read" in maps[0].message
    fixed = apply(src, maps[0])
    assert b"map(tofrom: out[0:n]) map(to: in[0:n]) map(tmp[0:n])" in fixed
    assert not has_error(fixed)
    loops = where(src, adv, "RL012")
    assert [k for k, _ in loops] == ["smooth"]  # `once` maps its data around the loop


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_offload_fix_still_compiles(tmp_path: Path) -> None:
    src, adv = run("offload.cpp")
    fixed = apply(src, next(a for a in adv if a.code == "RL011"))
    for name, data in (("before.cpp", src), ("after.cpp", fixed)):
        path = tmp_path / name
        path.write_bytes(data)
        proc = subprocess.run(
            ["g++", "-fopenmp", "-fsyntax-only", "-Wall", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr


def test_acc_copy_on_read_only_data() -> None:
    src = (
        b"void f(int n, const float *a, float *c) {\n"
        b"#pragma acc parallel loop copy(a[0:n]) copyout(c[0:n])\n"
        b"  for (int i = 0; i < n; i++) c[i] = a[i] * 2.0f;\n}\n"
    )
    adv = advise(report(src, "f.c", "bandwidth"), RTX)
    fixes = [a for a in adv if a.code == "RL011"]
    assert len(fixes) == 1
    assert b"#pragma acc parallel loop copyin(a[0:n]) copyout(c[0:n])" in apply(src, fixes[0])


REGION = """void step(int n, float *x)
{
    #pragma omp target teams distribute parallel for map(tofrom: x[0:n])
    for (int i = 0; i < n; i++) x[i] = x[i] * 0.5f + 1.0f;
}
"""


@pytest.mark.parametrize(
    ("caller", "expected"),
    [
        # the region's function called from a loop of another file of the program
        ("void step(int n, float *x);\nvoid drive(int n, int s, float *x)\n"
         "{\n    for (int t = 0; t < s; t++) step(n, x);\n}\n", True),
        # near misses: called once, or from a loop inside a data region
        ("void step(int n, float *x);\nvoid once(int n, float *x) { step(n, x); }\n", False),
        ("void step(int n, float *x);\nvoid drive(int n, int s, float *x)\n{\n"
         "    #pragma omp target data map(tofrom: x[0:n])\n"
         "    for (int t = 0; t < s; t++) step(n, x);\n}\n", False),
    ],
)  # fmt: skip
def test_map_in_loop_across_the_files_of_a_program(
    tmp_path: Path, caller: str, expected: bool
) -> None:
    (tmp_path / "region.cpp").write_text(REGION)
    (tmp_path / "main.cpp").write_text(caller)
    path = tmp_path / "region.cpp"
    src = path.read_bytes()
    found = [a for a in advise(report(src, str(path), "bandwidth"), RTX) if a.code == "RL012"]
    if expected:
        (a,) = found
        assert "loop in `drive` (main.cpp) that calls `step`" in a.message
    else:
        assert found == []
