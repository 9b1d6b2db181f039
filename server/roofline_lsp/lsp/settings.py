"""Client settings -> :class:`~roofline_lsp.model.config.Config`, resolved in one place.

``initializationOptions`` give the base configuration; the ``roofline`` section of the
client's settings (pulled with ``workspace/configuration`` when the client supports it, else
pushed with ``didChangeConfiguration``) goes on top. A key whose value is invalid keeps its
last valid value and is shown once (``RooflineServer.show_config_error``); GPU names, the GPU
profile file and the measured profile are checked by :meth:`Workspace.settle`.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from lsprotocol import types as lsp

from roofline_lsp.engine.workspace import one_line
from roofline_lsp.lsp.language_server import RooflineServer, guard
from roofline_lsp.model.config import Config

CONFIG_SECTION = "roofline"
REANALYSE_TITLE = "roofline: re-analysing open files"


def settings_section(settings: object) -> object:
    """The ``roofline`` part of a settings object (clients send it wrapped or not)."""
    if isinstance(settings, dict) and CONFIG_SECTION in settings:
        return settings[CONFIG_SECTION]
    return settings


def restore_setting(new: Config, old: Config, key: str) -> Config:
    """``new`` with the setting ``key`` (camelCase, ``llm.x`` for LLM settings) from ``old``."""
    top, _, sub = key.partition(".")
    name = _snake_case(top)
    if not name:
        return old
    if sub and name == "llm":
        sname = _snake_case(sub)
        if hasattr(old.llm, sname):
            return replace(new, llm=replace(new.llm, **{sname: getattr(old.llm, sname)}))
        return new
    if hasattr(old, name):
        return replace(new, **{name: getattr(old, name)})
    return new


def _snake_case(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def apply_settings(ls: RooflineServer, settings: object) -> bool:
    """Make ``settings`` (the ``roofline`` section; None: nothing set) the configuration on
    top of ``initializationOptions``. Invalid keys keep their last valid value and are shown
    once each. Returns whether anything changed."""
    ws = ls.ws
    old = ws.config
    if settings is not None and not isinstance(settings, dict):
        ls.show_config_error("", f"roofline: settings must be an object, got {settings!r}")
        return False
    new, errors = ws.base_config.merged(settings or {})
    bad: set[str] = set()
    for err in errors:
        bad.add(err.key)
        ls.show_config_error(err.key, str(err))
        new = restore_setting(new, old, err.key)
    new, problems = ws.settle(new, old)
    for problem in problems:
        bad.add(problem.key)
        ls.show_config_error(problem.key, str(problem))
    for key in list(ls.shown_errors):
        if key not in bad:
            del ls.shown_errors[key]
    ws.config = new
    if new.gpu != old.gpu or new.gpu_profiles != old.gpu_profiles:
        ws.gpu_override = None
    return new != old


async def pull_configuration(ls: RooflineServer, settings: object = None) -> bool:
    """Ask the client for the ``roofline`` section (or use pushed ``settings``) and apply
    it; whether the configuration changed."""
    if ls.capable("workspace.configuration"):
        try:
            result = await asyncio.wait_for(
                ls.workspace_configuration_async(
                    lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=CONFIG_SECTION)])
                ),
                10,
            )
            settings = result[0] if result else None
        except Exception as e:
            ls.logmsg(f"roofline: workspace/configuration failed: {one_line(e)}")
            settings = None
    else:
        settings = settings_section(settings)
    return apply_settings(ls, settings)


@guard(lambda: None)
def initialize(ls: RooflineServer, params: lsp.InitializeParams) -> None:
    """The base configuration, from ``initializationOptions``."""
    ls.init_options = settings_section(params.initialization_options)
    opts = ls.init_options if isinstance(ls.init_options, dict) else None
    if ls.init_options is not None and opts is None:
        ls.show_config_error("", "roofline: initializationOptions must be an object")
    base, errors = Config.from_dict(opts)
    for err in errors:
        ls.show_config_error(err.key, str(err))
        base = restore_setting(base, Config(), err.key)
    base, problems = ls.ws.settle(base, Config())
    for problem in problems:
        ls.show_config_error(problem.key, str(problem))
    ls.ws.base_config = ls.ws.config = base


@guard(lambda: None)
async def initialized(ls: RooflineServer, params: lsp.InitializedParams) -> None:
    """Pull the client's settings; analyses wait for them (briefly)."""
    try:
        changed = await pull_configuration(ls)
    finally:
        ls.scheduler.config_ready.set()
    if changed and ls.ws.analyses:
        ls.scheduler.reanalyse_all(REANALYSE_TITLE)


@guard(lambda: None)
async def did_change_configuration(
    ls: RooflineServer, params: lsp.DidChangeConfigurationParams
) -> None:
    old_gpus = ls.ws.config.gpus
    changed = await pull_configuration(ls, params.settings)
    if changed or old_gpus != ls.ws.config.gpus:
        ls.scheduler.reanalyse_all(REANALYSE_TITLE)
