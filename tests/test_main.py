"""The console script (``cli/main.py``): usage errors in one line, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from roofline_lsp.cli.arguments import EXIT_USAGE


def test_console_script_never_shows_a_traceback(tmp_path):
    exe = Path(sys.executable).parent / "roofline-lsp"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "roofline_lsp"]
    for args in (["check", "/nonexistent"], ["check", "--gpu"], ["eval"], ["bogus"]):
        p = subprocess.run(cmd + args, capture_output=True, text=True, timeout=60)
        assert p.returncode == EXIT_USAGE, (args, p.stderr)
        assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr
