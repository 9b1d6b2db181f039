"""A short seeded run of ``benchmarks/fuzz_lsp.py`` against `roofline-lsp serve` over stdio.

Random incremental edits (huge single lines among them), open/close cycles and requests in
between, some with wrongly typed params: the server must not die, must answer every request
(InvalidParams for the bad ones), and must print no traceback. Speed and memory figures are
the long run's (the README's "Robustness"), not asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_seeded_fuzz_run_has_no_crash_hang_or_traceback() -> None:
    cmd = [
        sys.executable,
        str(REPO / "benchmarks" / "fuzz_lsp.py"),
        "--edits",
        "3000",
        "--seed",
        "7",
        "--huge",
        "0.002",
        "--reopen",
        "800",
        "--hang-s",
        "20",  # a shared CI machine: a hang is a request never answered, not a slow one
        "--json",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=REPO)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["edits"] == 3000
    assert result["huge_lines"] > 0 and result["reopens"] > 0
    assert result["crashes"] == 0, result
    assert result["exit_code"] == 0, result
    assert result["hangs"] == 0, result["hang_examples"]
    assert result["tracebacks"] == 0, result["stderr_tail"]
    assert result["wrong_answers"] == 0, result["wrong_examples"]
    assert result["answered"] == result["requests"] + 2  # + initialize and shutdown
    assert proc.returncode == 0
