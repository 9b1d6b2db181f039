"""``roofline-lsp serve``: the language server, on stdio or TCP."""

from __future__ import annotations

import argparse
from typing import TextIO

from roofline_lsp.cli.arguments import UsageError
from roofline_lsp.lsp.server import main_serve


def cmd_serve(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if ns.tcp:
        host, _, port = ns.tcp.rpartition(":")
        if not host or not port.isdigit():
            raise UsageError("--tcp: expected HOST:PORT, e.g. 127.0.0.1:2087")
    return main_serve(ns.tcp)
