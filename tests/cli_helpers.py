"""Running the CLI in-process for tests: ``run("check", path) -> (exit code, stdout, stderr)``."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from roofline_lsp.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DETECT = Path(__file__).parent / "fixtures" / "detect"


def run(*argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    err_buf = io.StringIO()
    old = sys.stderr
    sys.stderr = err_buf
    try:
        code = main(list(argv), out=out)
    finally:
        sys.stderr = old
    return code, out.getvalue(), err_buf.getvalue()
