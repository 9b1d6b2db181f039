"""The engine for ``check`` and ``eval``, from the command line's arguments."""

from __future__ import annotations

import argparse

from roofline_lsp.cli.arguments import UsageError, config_from_args
from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.model.gpus import GpuProfileError, UnknownGpuError, load_registry


def workspace_from_args(ns: argparse.Namespace) -> Workspace:
    """The engine for ``check``/``eval``: every GPU name must exist and the measured profile
    must load (a usage error otherwise; the editor keeps the last valid value instead)."""
    config = config_from_args(ns)
    try:
        registry = load_registry(config.gpu_profiles)
        for name in config.gpus:
            registry.get(name)
    except (UnknownGpuError, GpuProfileError) as e:
        raise UsageError(str(e)) from None
    ws = Workspace(config)
    if config.profile:
        problem = ws.load_measured(config.profile)
        if problem is not None:
            raise UsageError(f"--profile: {problem}")
    return ws
