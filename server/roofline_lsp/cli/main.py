"""Command line: ``roofline-lsp check | eval | gpus | serve | export-finetune``.

Exit codes (also in the README):
  0  success
  1  unexpected internal error (reported in one line, never a traceback)
  2  usage error: bad flag or value, unknown GPU, broken GPU profile TOML, missing path,
     unreadable dataset or profile
  3  nothing to analyse: no source files under the given paths
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TextIO

from roofline_lsp import __version__
from roofline_lsp.engine.analysis import FileReport, KernelReport, analyze_file
from roofline_lsp.engine.files import InputError, collect_files, read_source
from roofline_lsp.model.config import BACKENDS, COUNTS_MODES, MODES, Config, ConfigError, LlmConfig

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOTHING = 0, 1, 2, 3


class UsageError(Exception):
    """A problem with what the user asked for: message shown, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="roofline-lsp",
        description="Is each GPU kernel compute-bound or bandwidth-bound on your GPU?",
    )
    p.add_argument("--version", action="version", version=f"roofline-lsp {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(sp: argparse.ArgumentParser, gpu_default: str | None) -> None:
        sp.add_argument(
            "--gpu",
            default=gpu_default,
            help="target GPU, or a comma-separated list (first is the target); "
            "see `roofline-lsp gpus`",
        )
        sp.add_argument("--gpu-profiles", metavar="TOML", help="extra or overriding GPU profiles")
        sp.add_argument(
            "--args", metavar="VALUES", help='program arguments / values, e.g. "n=1<<20"'
        )
        sp.add_argument("--profile", metavar="CSV", help="Nsight Compute CSV (--csv --page raw)")
        sp.add_argument("--counts", choices=COUNTS_MODES, default="auto")
        sp.add_argument("--nvcc", metavar="PATH", help="nvcc to use for --counts compiler/auto")
        sp.add_argument("--backend", choices=BACKENDS, default="static")
        sp.add_argument("--base-url", help="OpenAI-compatible endpoint (LLM backend)")
        sp.add_argument("--model", help="model name (LLM backend)")
        sp.add_argument("--api-key-env", help="environment variable holding the API key")
        sp.add_argument("--mode", choices=MODES, help="LLM prompting mode")
        sp.add_argument("--cache-dir", help="LLM/compile result cache directory")
        sp.add_argument("--few-shot-dataset", metavar="DIR", help="labelled set for few-shot")
        sp.add_argument(
            "--max-file-bytes", type=int, default=Config().max_file_bytes, help=argparse.SUPPRESS
        )

    c = sub.add_parser("check", help="classify the kernels of files and folders")
    c.add_argument("paths", nargs="+", metavar="PATH")
    common(c, "h100")
    c.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    c.add_argument("--output", "-o", metavar="FILE", help="write JSON/SARIF here, not stdout")

    e = sub.add_parser("eval", help="score against a labelled dataset folder")
    e.add_argument("--dataset", required=True, metavar="DIR")
    common(e, "rtx3080")
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
        max_file_bytes=ns.max_file_bytes,
    )


def resolve_gpus(config: Config) -> tuple[Any, ...]:
    from roofline_lsp.model.gpus import GpuProfileError, UnknownGpuError, load_registry

    try:
        registry = load_registry(config.gpu_profiles)
        return tuple(registry.get(name) for name in config.gpus)
    except (UnknownGpuError, GpuProfileError) as e:
        raise UsageError(str(e)) from None


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


def _load_measured(config: Config) -> Any:
    if not config.profile:
        return None
    from roofline_lsp.measured.ncu import ProfileError, load_profile

    try:
        return load_profile(config.profile)
    except (OSError, ProfileError) as e:
        raise UsageError(f"--profile: {e}") from None


def _inputs_from_args(config: Config) -> Any:
    from roofline_lsp.estimate.roofline import Inputs

    return Inputs(args=config.args) if config.args else None


# --------------------------------------------------------------------------------------------
# check
# --------------------------------------------------------------------------------------------


def cmd_check(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    config = config_from_args(ns)
    gpus = resolve_gpus(config)
    measured = _load_measured(config)
    try:
        files, _ = collect_files(ns.paths)
    except InputError as e:
        raise UsageError(str(e)) from None
    if not files:
        err.write(
            "roofline-lsp: no source files (.cu .cuh .cpp .cc .cxx .c .h .hpp .hip) under "
            + ", ".join(ns.paths)
            + "\n"
        )
        return EXIT_NOTHING
    base = ns.paths[0] if len(ns.paths) == 1 and os.path.isdir(ns.paths[0]) else None
    progress = Progress("analysing", err)
    inputs = _inputs_from_args(config)
    reports: list[FileReport] = []
    compiled = _compile_check_files(files, config, gpus[0], err)
    for i, path in enumerate(files, 1):
        source, problem = read_source(path, config.max_file_bytes)
        if source is None:
            err.write(f"{path}: {problem}\n")
        else:
            fconfig = config.for_file(path)
            report = analyze_file(
                source,
                path,
                gpus,
                fconfig,
                measured=measured,
                inputs=inputs,
                compiled=compiled.get(path),
            )
            reports.append(report)
        progress(i, len(files))
    if config.backend != "static":
        reports = asyncio.run(_refine_with_llm(reports, config, gpus, err))
    if ns.format == "text":
        lines = _text(reports, base)
        out.write("".join(line + "\n" for line in lines))
        n = sum(len(r.kernels) for r in reports)
        err.write(f"{n} kernel{'s' if n != 1 else ''} in {len(files)} file(s)\n")
        return EXIT_OK
    from roofline_lsp.present.formats import dumps, to_json, to_sarif

    doc = dumps(to_json(reports, base) if ns.format == "json" else to_sarif(reports, base))
    if ns.output:
        try:
            with open(ns.output, "w", encoding="utf-8") as f:
                f.write(doc)
        except OSError as e:
            raise UsageError(f"--output {ns.output}: {e.strerror or e}") from None
    else:
        out.write(doc)
    return EXIT_OK


def _text(reports: list[FileReport], base: str | None) -> list[str]:
    from roofline_lsp.present.formats import text_lines

    return text_lines(reports, base)


async def _refine_with_llm(
    reports: list[FileReport], config: Config, gpus: tuple[Any, ...], err: TextIO
) -> list[FileReport]:
    """Ask the LLM for every kernel's verdict on the target GPU; on failure keep the static
    verdict and say why in one line."""
    from roofline_lsp.llm.backend import LlmBackend, LlmError

    backend = LlmBackend(config.llm)
    jobs: list[tuple[int, int]] = [
        (i, j)
        for i, fr in enumerate(reports)
        for j, kr in enumerate(fr.kernels)
        if kr.verdict.source != "profile"  # measured verdicts need no LLM
    ]
    progress = Progress("asking the LLM", err)
    done = 0
    failures: list[str] = []

    async def one(i: int, j: int) -> tuple[int, int, Any]:
        nonlocal done
        fr = reports[i]
        kr = fr.kernels[j]
        launch = next(iter(fr.detection.launches_of(kr.kernel)), None)
        try:
            v = await backend.verdict(
                kr.kernel, fr.detection, gpus[0], static=kr.verdict, launch=launch
            )
        except LlmError as e:
            failures.append(f"{fr.path}:{kr.kernel.line}: {kr.kernel.name}: LLM: {e}")
            v = None
        done += 1
        progress(done, len(jobs))
        return i, j, v

    try:
        results = await asyncio.gather(*(one(i, j) for i, j in jobs))
    finally:
        await backend.aclose()
    new = [list(fr.kernels) for fr in reports]
    for i, j, v in results:
        if v is not None:
            kr = new[i][j]
            new[i][j] = KernelReport(kr.kernel, (v, *kr.verdicts[1:]))
    for line in failures:
        err.write(line + " (kept the static verdict)\n")
    s = backend.stats
    err.write(
        f"LLM: {s.requests} request(s), {s.cache_hits} cache hit(s), "
        f"{s.prompt_tokens + s.completion_tokens} tokens\n"
    )
    return [replace(fr, kernels=tuple(k)) for fr, k in zip(reports, new, strict=True)]


# --------------------------------------------------------------------------------------------
# eval
# --------------------------------------------------------------------------------------------


def cmd_eval(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from roofline_lsp.estimate.roofline import estimate
    from roofline_lsp.evaluation.scoring import DatasetError, Row, error_groups, run_eval

    config = config_from_args(ns)
    gpus = resolve_gpus(config)
    gpu = gpus[0]
    measured = _load_measured(config)

    use_compiler = config.counts != "source" and not ns.detection_only
    compiled_files: dict[Any, Any] = {}
    compile_seconds = 0.0
    if use_compiler:
        try:
            compiled_files, compile_seconds = _compile_eval_files(ns.dataset, config, gpu, err)
        except DatasetError as e:
            raise UsageError(str(e)) from None
    counts_from: dict[int, str] = {}

    def classify(row: Row) -> Any:
        assert row.kernel is not None and row.detection is not None
        if measured is not None:
            v = measured.verdict_for(row.kernel, gpu)
            if v is not None:
                return v
        cc = None
        if use_compiler:
            from roofline_lsp.compiler.compiled import compiler_language, counts_for

            lang = compiler_language(row.kernel.language)
            path = os.path.join(ns.dataset, "sources", str(row.data["file"]))
            cc = counts_for(compiled_files.get((path, lang)), row.kernel, config.counts)
            counts_from[id(row)] = "ptx" if cc.ok else "source"
        return estimate(row.kernel, row.detection, gpu, row.inputs(), config, compiled=cc)

    try:
        result = run_eval(
            ns.dataset,
            None if ns.detection_only else classify,
            progress=Progress("evaluating", err),
        )
    except DatasetError as e:
        raise UsageError(str(e)) from None
    if config.backend != "static" and not ns.detection_only:
        result = asyncio.run(_eval_llm(result, config, gpu, err))
    summary = result.summary()
    summary = {"gpu": gpu.name, **summary}
    if not ns.detection_only:
        # where each verdict's FLOP/integer counts came from (PTX or the source analysis)
        froms = [counts_from.get(id(r), "source") for r in result.rows]
        for pred, r, src in zip(summary["predictions"], result.rows, froms, strict=True):
            if r.kernel is not None:
                pred["counts_from"] = src
        found = [f for f, r in zip(froms, result.rows, strict=True) if r.kernel is not None]
        summary["counts"] = {
            "mode": config.counts,
            "ptx": found.count("ptx"),
            "source": found.count("source"),
        }
        if use_compiler:
            summary["compile_seconds"] = round(compile_seconds, 2)
            summary["seconds"] = round(summary["seconds"] + compile_seconds, 2)
    printable = {k: v for k, v in summary.items() if k != "predictions"}
    out.write(json.dumps(printable, indent=2) + "\n")
    if ns.errors and not ns.detection_only:
        for cause, rows in error_groups(result).items():
            out.write(f"\n## {cause} ({len(rows)})\n")
            for r in rows:
                expl = r.verdict.explanation if r.verdict else r.error or ""
                out.write(f"  {r.id} [{r.label} -> {r.predicted}] {expl}\n")
    if ns.json:
        try:
            with open(ns.json, "w", encoding="utf-8") as f:
                json.dump(summary, f, indent=2)
                f.write("\n")
        except OSError as e:
            raise UsageError(f"--json {ns.json}: {e.strerror or e}") from None
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# compiler counts (--counts compiler|auto)
# --------------------------------------------------------------------------------------------


def _compile_check_files(
    files: Sequence[str], config: Config, gpu: Any, err: TextIO
) -> dict[str, dict[int, Any]]:
    """Compile the files of ``check`` (2 at a time, cached) and give each kernel its compiler
    counts, by path then kernel line; {} with ``--counts source``. A file that does not
    compile keeps source counts and its verdicts say why."""
    from roofline_lsp.compiler.compiled import (
        CompileRequest,
        compile_files_sync,
        compiler_language,
        counts_for,
        default_cache,
        want_for,
    )
    from roofline_lsp.detect.kernels import detect

    detections: dict[str, Any] = {}
    requests = []
    for path in files:
        fconfig = config.for_file(path)
        if fconfig.counts == "source":
            continue
        source, _ = read_source(path, config.max_file_bytes)
        if source is None:
            continue
        try:
            det = detect(source, path)
        except Exception:  # analyze_file reports the file's problem
            continue
        detections[path] = det
        for lang, want in want_for(det.kernels, fconfig.counts).items():
            requests.append(CompileRequest(path, lang, want))
    if not requests:
        return {}
    compiled = compile_files_sync(
        requests, gpu, config, cache=default_cache(config), progress=Progress("compiling", err)
    )
    out: dict[str, dict[int, Any]] = {}
    for path, det in detections.items():
        mode = config.for_file(path).counts
        out[path] = {
            k.line: counts_for(compiled.get((path, lang)) if lang else None, k, mode)
            for k in det.kernels
            for lang in [compiler_language(k.language)]
        }
    return out


def _compile_eval_files(
    dataset: str, config: Config, gpu: Any, err: TextIO
) -> tuple[dict[Any, Any], float]:
    """Compile every file of the dataset's rows before classifying (2 at a time, cached):
    CUDA files with nvcc for the rows' kernel names, OpenMP files with clang for their target
    lines. Returns the outcomes by (path, language) and the seconds spent."""
    import time

    from roofline_lsp.compiler.compiled import (
        CompileRequest,
        compile_files_sync,
        compiled_languages,
        default_cache,
    )
    from roofline_lsp.evaluation.scoring import load_rows

    start = time.perf_counter()
    enabled = compiled_languages(config.counts)
    wants: dict[tuple[str, str], list[str]] = {}
    for row in load_rows(dataset):
        lang = "omp" if row.language == "omp" else "cuda"
        if lang not in enabled:
            continue
        path = os.path.join(dataset, "sources", str(row.data["file"]))
        w = f"@{row.data['line']}" if lang == "omp" else str(row.data.get("kernel", ""))
        lst = wants.setdefault((path, lang), [])
        if w and w not in lst:
            lst.append(w)
    requests = [
        CompileRequest(path, lang, tuple(w))  # type: ignore[arg-type]
        for (path, lang), w in wants.items()
    ]
    compiled = compile_files_sync(
        requests, gpu, config, cache=default_cache(config), progress=Progress("compiling", err)
    )
    return compiled, time.perf_counter() - start


async def _eval_llm(result: Any, config: Config, gpu: Any, err: TextIO) -> Any:
    from roofline_lsp.llm.backend import LlmBackend, LlmError

    backend = LlmBackend(config.llm)
    progress = Progress("asking the LLM", err)
    rows = [
        r
        for r in result.rows
        if r.kernel is not None and (r.verdict is None or r.verdict.source != "profile")
    ]
    done = 0

    async def one(r: Any) -> None:
        nonlocal done
        try:
            r.verdict = await backend.verdict(
                r.kernel, r.detection, gpu, static=r.verdict, inputs=r.inputs()
            )
        except LlmError as e:
            r.error = f"LLM: {e}"
        done += 1
        progress(done, len(rows))

    try:
        await asyncio.gather(*(one(r) for r in rows))
    finally:
        await backend.aclose()
    s = backend.stats
    result.extra["llm"] = {
        "model": config.llm.model,
        "mode": config.llm.mode,
        "requests": s.requests,
        "cache_hits": s.cache_hits,
        "prompt_tokens": s.prompt_tokens,
        "completion_tokens": s.completion_tokens,
        "errors": s.errors,
    }
    return result


# --------------------------------------------------------------------------------------------
# gpus, serve, export-finetune
# --------------------------------------------------------------------------------------------


def cmd_gpus(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from roofline_lsp.model.gpus import GpuProfileError, format_table, load_registry
    from roofline_lsp.model.gpus import to_json as gpu_json

    try:
        registry = load_registry(ns.gpu_profiles)
    except GpuProfileError as e:
        raise UsageError(str(e)) from None
    if ns.json:
        out.write(json.dumps([gpu_json(g) for g in registry.all()], indent=2) + "\n")
    else:
        out.write(format_table(registry) + "\n")
    return EXIT_OK


def cmd_serve(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from roofline_lsp.lsp.server import main_serve

    if ns.tcp:
        host, _, port = ns.tcp.rpartition(":")
        if not host or not port.isdigit():
            raise UsageError("--tcp: expected HOST:PORT, e.g. 127.0.0.1:2087")
    return main_serve(ns.tcp)


def cmd_export_finetune(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from roofline_lsp.llm.finetune import export_finetune
    from roofline_lsp.model.gpus import GpuProfileError, UnknownGpuError, load_registry

    try:
        gpu = load_registry(ns.gpu_profiles).get(ns.gpu)
    except (UnknownGpuError, GpuProfileError) as e:
        raise UsageError(str(e)) from None
    try:
        stats = export_finetune(ns.dataset, ns.out, gpu)
    except (OSError, ValueError) as e:
        raise UsageError(f"export-finetune: {e}") from None
    err.write(f"{stats}\n")
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO, TextIO], int]] = {
    "check": cmd_check,
    "eval": cmd_eval,
    "gpus": cmd_gpus,
    "serve": cmd_serve,
    "export-finetune": cmd_export_finetune,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = sys.stderr
    try:
        ns = build_parser().parse_args(argv)
        return COMMANDS[ns.command](ns, out, err)
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
