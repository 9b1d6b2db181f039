"""Command line: ``roofline-lsp check | report | eval | gpus | serve | export-finetune``.

Exit codes (also in the README):
  0  success
  1  unexpected internal error (reported in one line, never a traceback)
  2  usage error: bad flag or value, unknown GPU, broken GPU profile TOML, missing path,
     unreadable dataset or profile
  3  nothing to analyse: no source files under the given paths (a named file that is not
     a source, e.g. `x.py`, is skipped with a note, as a folder skips it)
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from roofline_lsp.cli.arguments import (
    EXIT_ERROR,
    EXIT_NOTHING,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    build_parser,
)
from roofline_lsp.model.config import ConfigError

__all__ = ["EXIT_ERROR", "EXIT_NOTHING", "EXIT_OK", "EXIT_USAGE", "main"]

Command = Callable[[argparse.Namespace, TextIO, TextIO], int]

# command -> (module, function): a command imports only what it uses, so `gpus` starts in a
# third of a second and `check` does not load the language server
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("roofline_lsp.cli.check", "cmd_check"),
    "eval": ("roofline_lsp.cli.evaluate", "cmd_eval"),
    "report": ("roofline_lsp.cli.report", "cmd_report"),
    "gpus": ("roofline_lsp.cli.list_gpus", "cmd_gpus"),
    "serve": ("roofline_lsp.cli.serve", "cmd_serve"),
    "export-finetune": ("roofline_lsp.cli.export_finetune", "cmd_export_finetune"),
}


def command(name: str) -> Command:
    module, function = COMMANDS[name]
    run: Command = getattr(importlib.import_module(module), function)
    return run


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = sys.stderr
    try:
        ns = build_parser().parse_args(argv)
        return command(ns.command)(ns, out, err)
    except UsageError as e:
        err.write(f"roofline-lsp: {e}\n".replace("roofline-lsp: roofline-lsp", "roofline-lsp"))
        return EXIT_USAGE
    except ConfigError as e:
        err.write(f"roofline-lsp: {e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.write("roofline-lsp: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # the CLI never shows a traceback
        err.write(f"roofline-lsp: internal error: {type(e).__name__}: {e}\n")
        if os.environ.get("ROOFLINE_LSP_DEBUG"):
            raise
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
