"""The command line's grammar: the parser, the typed :class:`Config` it gives, usage errors
and the progress bar. No analysis here: the commands call the engine (``cli/session.py``)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any, NoReturn, TextIO

from roofline_lsp import __version__
from roofline_lsp.engine.time_budget import DEFAULT_FILE_SECONDS
from roofline_lsp.model.config import (
    BACKENDS,
    BUILD_COMPILERS,
    COUNTS_MODES,
    MODES,
    Config,
    LlmConfig,
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOTHING = 0, 1, 2, 3


class UsageError(Exception):
    """A problem with what the user asked for: message shown, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """Usage errors as :class:`UsageError`; no abbreviated flags (``--gpu`` must never be
    read as ``--gpu-profiles``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


class _Listed(argparse.Action):
    """A comma-separated list that repeats add to: ``--gpu a100 --gpu h100`` is ``--gpu
    a100,h100`` (a later flag does not silently replace an earlier one); the default stands
    until the first is given."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = f"_{self.dest}_given"
        current = getattr(namespace, self.dest, None) if getattr(namespace, given, False) else None
        setattr(namespace, self.dest, f"{current},{values}" if current else values)
        setattr(namespace, given, True)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="roofline-lsp",
        description="Is each GPU kernel compute-bound or bandwidth-bound on your GPU?",
    )
    p.add_argument("--version", action="version", version=f"roofline-lsp {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(
        sp: argparse.ArgumentParser, gpu_default: str | None, build_default: str = "nvcc"
    ) -> None:
        sp.add_argument(
            "--gpu",
            default=gpu_default,
            action=_Listed,
            help="target GPU, or a comma-separated list (first is the target; repeated "
            "flags add to it); see `roofline-lsp gpus`",
        )
        sp.add_argument("--gpu-profiles", metavar="TOML", help="extra or overriding GPU profiles")
        sp.add_argument(
            "--args", metavar="VALUES", help='program arguments / values, e.g. "n=1<<20"'
        )
        sp.add_argument("--profile", metavar="CSV", help="Nsight Compute CSV (--csv --page raw)")
        sp.add_argument("--counts", choices=COUNTS_MODES, default="auto")
        sp.add_argument("--nvcc", metavar="PATH", help="nvcc to use for --counts compiler/auto")
        sp.add_argument(
            "--build-compiler",
            choices=BUILD_COMPILERS,
            default=build_default,
            help="the compiler that builds the CUDA code: its math library's defaults are "
            "counted (clang's sqrtf is the approximation; default: %(default)s)",
        )
        sp.add_argument("--backend", choices=BACKENDS, default="static")
        sp.add_argument("--base-url", help="OpenAI-compatible endpoint (LLM backend)")
        sp.add_argument("--model", help="model name (LLM backend)")
        sp.add_argument("--api-key-env", help="environment variable holding the API key")
        sp.add_argument("--mode", choices=MODES, help="LLM prompting mode")
        sp.add_argument("--cache-dir", help="cache directory (results, compiles, LLM answers)")
        sp.add_argument("--few-shot-dataset", metavar="DIR", help="labelled set for few-shot")
        sp.add_argument(
            "--max-file-bytes",
            type=int,
            default=Config().max_file_bytes,
            metavar="N",
            help="skip files larger than N bytes, in one line on stderr (default: %(default)s)",
        )

    c = sub.add_parser(
        "check",
        help="classify the kernels of files and folders",
        epilog="A file that is not a regular file (FIFO, socket, device), is over "
        "--max-file-bytes, binary, or over --file-timeout is skipped with one line on stderr; "
        "the others' results are kept. Exit codes: 0 success (also with skipped files), "
        "1 internal error, 2 usage error, 3 no source files.",
    )
    c.add_argument("paths", nargs="+", metavar="PATH")
    common(c, "h100")
    c.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    c.add_argument("--output", "-o", metavar="FILE", help="write JSON/SARIF here, not stdout")
    c.add_argument(
        "--jobs", "-j", type=int, metavar="N", help="processes (default: the available cores)"
    )
    c.add_argument("--changed-since", metavar="REF", help="only files changed since git REF")
    c.add_argument("--shard", metavar="I/N", help="only shard I of N (1-based), for a CI matrix")
    c.add_argument("--no-cache", action="store_true", help="neither read nor write the results")
    c.add_argument("--progress", action="store_true", help="progress on stderr even when no tty")
    c.add_argument(
        "--file-timeout",
        type=float,
        default=DEFAULT_FILE_SECONDS,
        metavar="SECONDS",
        help="skip a file whose analysis takes over SECONDS of CPU time, in one line on "
        "stderr (0: no limit; default: %(default)g)",
    )
    c.add_argument(
        "--explain",
        action="store_true",
        help="text format: the full explanation of each verdict under its kernel",
    )

    r = sub.add_parser("report", help="draw the kernels on each GPU's roofline (HTML, SVG)")
    r.add_argument("paths", nargs="+", metavar="PATH")
    common(r, "h100")
    r.add_argument("--html", metavar="OUT", help="write the interactive chart here")
    r.add_argument("--svg", metavar="OUT", help="write a static SVG of the chart here")
    r.add_argument("--title", help="the chart's title (default: the paths)")

    e = sub.add_parser("eval", help="score against a labelled dataset folder")
    e.add_argument("--dataset", required=True, metavar="DIR")
    # the labelled sets are gpuFLOPBench's measurements, of HeCBench built with clang
    common(e, "rtx3080", build_default="clang")
    e.add_argument("--detection-only", action="store_true")
    e.add_argument("--json", metavar="OUT", help="write the full result as JSON")
    e.add_argument("--errors", action="store_true", help="print mispredictions by cause")

    g = sub.add_parser("gpus", help="list GPU profiles and their ridge points")
    g.add_argument("--gpu-profiles", metavar="TOML")
    g.add_argument("--json", action="store_true")

    s = sub.add_parser("serve", help="run the language server (stdio by default)")
    s.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    s.add_argument("--stdio", action="store_true", help="stdio (the default; for editors)")

    f = sub.add_parser("export-finetune", help="write chat fine-tuning JSONL from a dataset")
    f.add_argument("--dataset", required=True, metavar="DIR")
    f.add_argument("--out", required=True, metavar="FILE")
    f.add_argument("--gpu", default="rtx3080")
    f.add_argument("--gpu-profiles", metavar="TOML")
    return p


def config_from_args(ns: argparse.Namespace) -> Config:
    llm = LlmConfig()
    llm_updates: dict[str, Any] = {}
    for flag, key in (
        ("base_url", "base_url"),
        ("model", "model"),
        ("api_key_env", "api_key_env"),
        ("mode", "mode"),
        ("cache_dir", "cache_dir"),
        ("few_shot_dataset", "dataset"),
    ):
        value = getattr(ns, flag, None)
        if value:
            llm_updates[key] = value
    gpus = [g.strip() for g in (ns.gpu or "").split(",") if g.strip()]
    if not gpus:
        raise UsageError("--gpu: give at least one GPU name (see `roofline-lsp gpus`)")
    if ns.max_file_bytes < 1:
        raise UsageError("--max-file-bytes must be positive")
    return Config(
        gpu=gpus[0],
        compare_gpus=tuple(gpus[1:]),
        backend=ns.backend,
        counts=ns.counts,
        llm=replace(llm, **llm_updates),
        profile=ns.profile,
        gpu_profiles=ns.gpu_profiles,
        args=ns.args,
        nvcc=ns.nvcc,
        build_compiler=ns.build_compiler,
        max_file_bytes=ns.max_file_bytes,
    )


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.label = label

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        width = 30
        filled = int(width * done / total)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            self.stream.write("\r" + " " * (width + len(self.label) + 20) + "\r")
        self.stream.flush()
